"""The gateway's Ray: connect to ``RAY_ADDRESS``, or start a local head that outlives it.

The local head is started with ``ray start --head`` as processes of their own (a new
session), so it, and the detached worker actors on it, survive a gateway restart or a
``kill -9``; the next gateway finds it on the same port and connects to it. The head
declares the local node's label ``gridweave.io/node=<name>`` (which pins the node's jobs
to it) and the node's GPUs from the inventory (``--num-gpus``, simulated ones included;
jobs ask ``num_gpus=0`` since the gateway, not Ray, chooses the GPUs).
"""

from __future__ import annotations

import hashlib
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import ray

from job_gateway.execution.actors import NAMESPACE, NODE_LABEL
from job_gateway.execution.settings import ExecutionSettings
from job_gateway.inventory import Inventory, InventorySettings

__all__ = [
    "LocalHead",
    "connect_gateway_ray",
    "connect_ray",
    "ensure_local_head",
    "head_processes",
    "ray_temp_dir",
    "stop_local_head",
]

_log = logging.getLogger(__name__)
#: Ray's Unix sockets live under the temporary directory: their paths must stay short.
_MAX_TEMP_DIR_CHARS = 60
_START_TIMEOUT_S = 120.0


@dataclass(frozen=True, slots=True)
class LocalHead:
    """A local Ray head: its GCS address, its temporary directory, whether this call started it."""

    address: str
    temp_dir: Path
    started: bool


def ray_temp_dir(state_dir: Path) -> Path:
    """``<state>/ray``, or a short path under /tmp derived from it when that is too long."""
    wanted = (state_dir / "ray").resolve()
    if len(str(wanted)) <= _MAX_TEMP_DIR_CHARS:
        return wanted
    digest = hashlib.sha256(str(wanted).encode()).hexdigest()[:12]
    return Path("/tmp") / f"gridweave-ray-{digest}"


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def ensure_local_head(
    settings: ExecutionSettings, *, state_dir: Path, node: str, gpu_count: int
) -> LocalHead:
    """Find the local head on ``settings.ray_port``, or start one."""
    address = f"127.0.0.1:{settings.ray_port}"
    temp_dir = ray_temp_dir(state_dir)
    if _reachable("127.0.0.1", settings.ray_port):
        return LocalHead(address, temp_dir, started=False)
    temp_dir.mkdir(parents=True, exist_ok=True)
    command = [
        str(Path(sys.executable).with_name("ray")),
        "start",
        "--head",
        "--node-ip-address=127.0.0.1",
        f"--port={settings.ray_port}",
        f"--temp-dir={temp_dir}",
        f"--num-cpus={settings.ray_num_cpus}",
        f"--num-gpus={gpu_count}",
        f"--labels={NODE_LABEL}={node}",
        f"--object-store-memory={settings.ray_object_store_mb * 1024 * 1024}",
        "--include-dashboard=false",
        "--disable-usage-stats",
    ]
    _log.info("starting a local Ray head: %s", " ".join(command))
    started = subprocess.run(
        command,
        start_new_session=True,  # not in the gateway's process group: it outlives a kill
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=_START_TIMEOUT_S,
    )
    if started.returncode != 0:
        raise RuntimeError(
            f"ray start --head failed ({started.returncode}): {started.stderr.strip()[-2000:]}"
        )
    return LocalHead(address, temp_dir, started=True)


def connect_ray(
    ray_address: str | None,
    settings: ExecutionSettings,
    *,
    state_dir: Path,
    node: str,
    gpu_count: int,
) -> str:
    """Connect this process to Ray (``ray_address``, else the local head); the address."""
    if ray.is_initialized():  # one driver connection per process (tests share it)
        return str(ray.get_runtime_context().gcs_address)
    address = (
        ray_address
        or ensure_local_head(settings, state_dir=state_dir, node=node, gpu_count=gpu_count).address
    )
    ray.init(
        address=address,
        namespace=NAMESPACE,
        log_to_driver=False,  # user output goes to the object store, never to our log
        logging_level=logging.WARNING,
    )
    return address


def head_processes(temp_dir: Path) -> list[int]:
    """The processes of the Ray session under ``temp_dir``: its sessions' members.

    ``ray start`` runs in a session of its own, so every process of the head (workers and
    agents too, whose command lines Ray rewrites) shares the session id of the processes
    whose command line names ``temp_dir``.
    """
    marker = str(temp_dir).encode()
    own = os.getsid(0)
    members: dict[int, int] = {}
    sessions: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            session = os.getsid(pid)
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if not command:  # a zombie: nothing left to stop
            continue
        members[pid] = session
        if marker in command and session != own:
            sessions.add(session)
    return sorted(pid for pid, session in members.items() if session in sessions)


def stop_local_head(temp_dir: Path, *, grace_s: float = 10.0) -> list[int]:
    """Stop the local head of ``temp_dir`` and its workers by process id; the ids stopped.

    SIGTERM, then SIGKILL for what is left after ``grace_s``. Not ``ray stop``: that stops
    every Ray session of the machine.
    """
    pids = head_processes(temp_dir)
    _signal(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not head_processes(temp_dir):
            return pids
        time.sleep(0.2)
    _signal(head_processes(temp_dir), signal.SIGKILL)
    return pids


def _signal(pids: list[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass


def connect_gateway_ray(
    ray_address: str | None, settings: ExecutionSettings, *, state_dir: Path, inventory: Inventory
) -> str:
    """The gateway's connection: ``RAY_ADDRESS``, else the local head for this machine's node.

    The local head declares this machine's node (``GATEWAY_NODE_NAME``) and its GPUs as
    the inventory lists them.
    """
    node = InventorySettings().node_name
    listed = inventory.node(node)
    gpu_count = 0 if listed is None else len(listed.gpus)
    return connect_ray(ray_address, settings, state_dir=state_dir, node=node, gpu_count=gpu_count)
