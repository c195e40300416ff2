"""The OCI runtime configuration (``config.json``) of one job container, as plain data.

Pure: what the container may see and use is decided here and nowhere else, so a test can
read it off the returned dictionary. The runtime (runc or crun) enforces it.

- Namespaces: user (container root is ``host_uid`` on the host, one uid per platform user,
  never 0), pid, mount, ipc, uts, network (only a loopback of its own; with ``network``, an
  ``eth0`` the runtime's ``createRuntime`` hook wires to the node, and the node's resolvers
  in ``/etc/resolv.conf``: :mod:`job_gateway.sandbox.network`), cgroup.
- No capabilities at all, ``noNewPrivileges``, the usual masked and read-only paths of
  ``/proc`` and ``/sys``.
- Filesystem: the image's root read-only; ``/scratch`` (also ``HOME``, ``TMPDIR`` and the
  working directory) and ``/tmp``, both tmpfs of ``scratch_mb``, counted in the memory limit;
  the runner read-only at ``/opt/gridweave``; the job's ``pip=`` environment, if any,
  read-only at ``/opt/gridweave/env`` (first on ``PYTHONPATH`` after the runner); the
  allocated GPUs' device nodes, and with NVIDIA's the driver's libraries read-only at
  ``/opt/gridweave/driver`` (:mod:`job_gateway.sandbox.driver`). Nothing else of the host.
- cgroup: memory (swap included, so a job cannot page past it), CPU quota, pids; device
  access only to the GPUs' nodes and the usual pseudo-devices.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from job_gateway.sandbox.network import NetworkLink

__all__ = [
    "DRIVER_DIR",
    "ENV_DIR",
    "RUNNER_DIR",
    "SCRATCH_DIR",
    "ContainerLimits",
    "DeviceNode",
    "container_config",
    "device_node",
]

#: Where the runner and its cloudpickle are mounted in every container.
RUNNER_DIR = "/opt/gridweave"
#: The job's writable directory (its home and working directory).
SCRATCH_DIR = "/scratch"
#: Where a job's pip environment is mounted (its mount point is in the runner's directory).
ENV_DIR = f"{RUNNER_DIR}/env"
#: Where the NVIDIA driver's libraries and nvidia-smi are mounted (likewise).
DRIVER_DIR = f"{RUNNER_DIR}/driver"
_CPU_PERIOD_US = 100_000
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_MASKED_PATHS = (
    "/proc/acpi",
    "/proc/asound",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
)
_READONLY_PATHS = (
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
)
#: /dev/null, zero, full, random, urandom, tty: (major, minor), as every runtime allows them.
_PSEUDO_DEVICES = ((1, 3), (1, 5), (1, 7), (1, 8), (1, 9), (5, 0))


@dataclass(frozen=True, slots=True)
class ContainerLimits:
    """What one container may use: memory (MiB, swap included), CPUs (fractional), pids,
    and the size of its scratch (MiB)."""

    memory_mb: int
    cpus: float
    pids: int
    scratch_mb: int


@dataclass(frozen=True, slots=True)
class DeviceNode:
    """A host character device bound into the container at ``path`` (the same path)."""

    host_path: str
    path: str
    major: int
    minor: int


def device_node(host_path: str | Path, path: str) -> DeviceNode:
    """The device node at ``host_path``, to appear as ``path``; ``ValueError``: not a
    character device."""
    info = os.stat(host_path)
    if not stat.S_ISCHR(info.st_mode):
        raise ValueError(f"{host_path} is not a character device")
    return DeviceNode(str(host_path), path, os.major(info.st_rdev), os.minor(info.st_rdev))


def container_config(
    *,
    args: Sequence[str],
    rootfs: str | Path,
    runner_dir: str | Path,
    host_uid: int,
    limits: ContainerLimits,
    environment: Mapping[str, str],
    devices: Sequence[DeviceNode] = (),
    hostname: str = "gridweave",
    image_environment: Mapping[str, str] | None = None,
    network: NetworkLink | None = None,
    python_env: str | Path | None = None,
    driver: str | Path | None = None,
) -> dict[str, Any]:
    """The ``config.json`` of a job container running ``args`` as container root.

    ``image_environment``: the variables of the image's config (its ``PATH``, ``LANG``...),
    under the sandbox's own (home, scratch, the runner's ``PYTHONPATH`` first) and the job's.
    ``network``: the container's veth pair (egress); None: only its loopback.
    ``python_env``: the job's pip environment on the node, mounted read-only at
    :data:`ENV_DIR`. ``driver``: the node's NVIDIA driver files, mounted read-only at
    :data:`DRIVER_DIR`, first on ``LD_LIBRARY_PATH`` and last on ``PATH``.
    """
    if host_uid <= 0:
        raise ValueError("a container's uid on the host is never root")
    memory = limits.memory_mb * 1024 * 1024
    image = dict(image_environment or {})
    env_dir = ENV_DIR if python_env is not None else None
    python_path = ":".join(filter(None, (RUNNER_DIR, env_dir, image.get("PYTHONPATH"))))
    if driver is not None:
        image["PATH"] = f"{image.get('PATH', _PATH)}:{DRIVER_DIR}"
        image["LD_LIBRARY_PATH"] = ":".join(
            filter(None, (DRIVER_DIR, image.get("LD_LIBRARY_PATH")))
        )
    env = {
        "PATH": _PATH,
        "LANG": "C.UTF-8",
        **image,
        "HOME": SCRATCH_DIR,
        "TMPDIR": SCRATCH_DIR,
        "PYTHONPATH": python_path,
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        **environment,
    }
    scratch = ["nosuid", "nodev", "mode=1777", f"size={limits.scratch_mb}m"]
    extra_mounts = []
    if python_env is not None:
        extra_mounts.append(
            {
                "destination": ENV_DIR,
                "type": "bind",
                "source": str(python_env),
                "options": ["rbind", "ro", "nosuid", "nodev"],
            }
        )
    if driver is not None:
        extra_mounts.append(
            {
                "destination": DRIVER_DIR,
                "type": "bind",
                "source": str(driver),
                "options": ["rbind", "ro", "nosuid", "nodev"],
            }
        )
    if network is not None and network.resolv_conf is not None:
        extra_mounts.append(
            {
                "destination": "/etc/resolv.conf",
                "type": "bind",
                "source": str(network.resolv_conf),
                "options": ["bind", "ro", "nosuid", "nodev", "noexec"],
            }
        )
    config: dict[str, Any] = {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False,
            "user": {"uid": 0, "gid": 0},
            "args": list(args),
            "env": [f"{name}={value}" for name, value in env.items()],
            "cwd": SCRATCH_DIR,
            "capabilities": {
                kind: []
                for kind in ("bounding", "effective", "inheritable", "permitted", "ambient")
            },
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 4096, "soft": 4096}],
            "noNewPrivileges": True,
        },
        "root": {"path": str(rootfs), "readonly": True},
        "hostname": hostname,
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {
                "destination": "/dev",
                "type": "tmpfs",
                "source": "tmpfs",
                "options": ["nosuid", "strictatime", "mode=755", "size=64k"],
            },
            {
                "destination": "/dev/pts",
                "type": "devpts",
                "source": "devpts",
                "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"],
            },
            {
                "destination": "/dev/shm",
                "type": "tmpfs",
                "source": "shm",
                "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"],
            },
            {
                "destination": "/sys",
                "type": "sysfs",
                "source": "sysfs",
                "options": ["nosuid", "noexec", "nodev", "ro"],
            },
            {"destination": SCRATCH_DIR, "type": "tmpfs", "source": "tmpfs", "options": scratch},
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": scratch},
            {
                "destination": RUNNER_DIR,
                "type": "bind",
                "source": str(runner_dir),
                "options": ["rbind", "ro", "nosuid", "nodev"],
            },
            *(
                {
                    "destination": device.path,
                    "type": "bind",
                    "source": device.host_path,
                    "options": ["bind", "nosuid", "noexec"],
                }
                for device in devices
            ),
            *extra_mounts,
        ],
        "linux": {
            "uidMappings": [{"containerID": 0, "hostID": host_uid, "size": 1}],
            "gidMappings": [{"containerID": 0, "hostID": host_uid, "size": 1}],
            "namespaces": [
                {"type": kind} for kind in ("pid", "network", "ipc", "uts", "mount", "user")
            ],
            "resources": {
                "devices": [
                    {"allow": False, "access": "rwm"},
                    *(
                        {
                            "allow": True,
                            "type": "c",
                            "major": major,
                            "minor": minor,
                            "access": "rwm",
                        }
                        for major, minor in _PSEUDO_DEVICES
                    ),
                    *(
                        {
                            "allow": True,
                            "type": "c",
                            "major": device.major,
                            "minor": device.minor,
                            "access": "rw",
                        }
                        for device in devices
                    ),
                ],
                "memory": {"limit": memory, "swap": memory},
                "cpu": {
                    "quota": max(1000, round(limits.cpus * _CPU_PERIOD_US)),
                    "period": _CPU_PERIOD_US,
                },
                "pids": {"limit": limits.pids},
            },
            "maskedPaths": list(_MASKED_PATHS),
            "readonlyPaths": list(_READONLY_PATHS),
        },
    }
    if network is not None:
        config["hooks"] = {"createRuntime": [network.hook()]}
    return config
