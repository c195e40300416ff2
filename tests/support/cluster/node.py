"""A GPU node of the test cluster: a machine that joins with the real ``deploy/join-node.sh``.

A node machine has network, mount, UTS and pid namespaces of its own (killing its init ends
all of it: WireGuard, Docker, the Ray worker, the heartbeat, the job containers), its own
``/etc``, ``/run``, ``/tmp``, ``/dev/shm`` and ``/var/lib/gridweave``, and a Docker daemon
of its own (Debian's ``docker.io``). It sees the host's programs (the repository and its
virtualenv, runc, the default job image under ``/var/cache/gridweave``) as a provisioned
machine would, and none of the master's files.

Stand-ins, for what cannot exist here (``standins/``, first on the scripts' ``PATH``):
``systemctl`` (no systemd in a namespace) and the K3s agent (no registry serves K3s), which
starts the node's Ray worker where K3s would start its pod. Until the real worker image is
built (the image test), the node's Docker holds a placeholder under the worker image's
name, which join-node.sh keeps as present; the agent stand-in finds that it runs no Ray
and starts the worker as a process, writing why to ``ray-worker.mode``.
"""

from __future__ import annotations

import io
import json
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

from tests.support.cluster.layout import Layout
from tests.support.cluster.machine import Machine, MachineSpec
from tests.support.cluster.master import MASTER_NODE, Master, private_mounts

__all__ = ["Node", "REPOSITORY", "RAY_WORKER_IMAGE", "STANDINS"]

REPOSITORY = Path(__file__).resolve().parents[3]
STANDINS = Path(__file__).with_name("standins")
RAY_WORKER_IMAGE = "gridweave/ray-worker:latest"
STATE_DIR = "/var/lib/gridweave/node"  # join-node.sh --state-dir, inside the node
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_DOCKER_START_S = 60.0


class Node:
    """Node ``number`` of the cluster (``node-<number>``)."""

    def __init__(self, workdir: Path, layout: Layout, number: int, *, cgroup: str) -> None:
        self.number = number
        self.name = f"node-{number}"
        self.workdir = workdir
        self.layout = layout
        self.cgroup = cgroup
        self.machine: Machine | None = None
        self.join_output = ""
        self.join_key = ""

    # -- the machine --------------------------------------------------------------------------

    def start(self) -> Machine:
        spec = MachineSpec(
            hostname=self.name,
            pid_namespace=True,
            mounts=private_mounts(self.workdir, own_tmp=True),
            cgroup=self.cgroup,
            hosts=[f"{self.layout.master_lan_ip} {MASTER_NODE}"],
        )
        self.machine = Machine(spec, self.workdir)
        return self.machine

    @property
    def running(self) -> Machine:
        assert self.machine is not None, f"{self.name} is not started"
        return self.machine

    @property
    def lan_ip(self) -> str:
        return self.layout.node_lan_ip(self.number)

    def start_docker(self) -> None:
        """The node's own Docker daemon (its data in the node's ``/var/lib/gridweave``, its
        containers' cgroups under the node's), as the node's docker.service would."""
        machine = self.running
        machine.popen(
            [
                "dockerd",
                "--data-root=/var/lib/gridweave/docker",
                "--exec-root=/run/docker",
                "--pidfile=/run/docker.pid",
                "--host=unix:///run/docker.sock",
                "--cgroup-parent=docker",
                "--storage-driver=overlay2",
                "--log-level=warn",
            ],
            log=self.workdir / "dockerd.log",
        )
        deadline = time.monotonic() + _DOCKER_START_S
        while machine.run(["docker", "info"], check=False).returncode != 0:
            if time.monotonic() > deadline or not machine.alive:
                log = (self.workdir / "dockerd.log").read_text()[-3000:]
                raise AssertionError(f"{self.name}'s Docker daemon did not start:\n{log}")
            time.sleep(0.5)

    def load_placeholder_image(self) -> None:
        """A one-file image under the worker image's name (it runs nothing)."""
        data = b"A placeholder for the Ray worker image, which the test cluster did not build.\n"
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            info = tarfile.TarInfo("GRIDWEAVE-PLACEHOLDER")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        path = self.workdir / "var-lib-gridweave" / "placeholder.tar"
        path.write_bytes(buffer.getvalue())
        try:
            self.running.run(
                ["docker", "import", "/var/lib/gridweave/placeholder.tar", RAY_WORKER_IMAGE]
            )
        finally:
            path.unlink()

    def give_pod_spec(self, master: Master, *, gpus: int, cpus: int = 1) -> None:
        """What KubeRay's pod spec would carry to the K3s agent stand-in: the head, Ray's
        token, the node's GPU count, the worker's size."""
        token = "/etc/gridweave-standin/ray-token"
        spec = {
            "RAY_HEAD": master.ray_address,
            "RAY_AUTH_TOKEN_FILE": token,
            "RAY_NUM_GPUS": str(gpus),
            "RAY_NUM_CPUS": str(cpus),
            "RAY_OBJECT_STORE_MB": "150",
            "RAY_BIN_DIR": str(Path(sys.executable).parent),
            "RAY_WORKER_IMAGE": RAY_WORKER_IMAGE,
        }
        lines = "".join(f"{key}={value}\n" for key, value in spec.items())
        machine = self.running
        machine.run(
            ["sh", "-c", "umask 077; mkdir -p /etc/gridweave-standin && cat > " + token],
            input=master.ray_token(),
        )
        machine.run(["sh", "-c", "cat > /etc/gridweave-standin/ray-pod.env"], input=lines)

    # -- the scripts ---------------------------------------------------------------------------

    def script_environment(self) -> dict[str, str]:
        """What join-node.sh and leave-node.sh run with: root's plain environment, the
        stand-ins first on PATH."""
        return {"PATH": f"{STANDINS}:{_PATH}", "HOME": "/root", "LANG": "C.UTF-8"}

    def join(self, master_url: str, join_key: str, gpus: list[dict[str, Any]]) -> str:
        """``deploy/join-node.sh`` for real (not --dry-run); its output."""
        done = self.running.run(
            [
                "bash",
                str(REPOSITORY / "deploy" / "join-node.sh"),
                "--master",
                master_url,
                "--join-key",
                join_key,
                "--gpus",
                json.dumps(gpus),
                "--state-dir",
                STATE_DIR,
            ],
            env=self.script_environment(),
            timeout=300,
        )
        self.join_output = done.stdout + done.stderr
        return self.join_output

    def leave(self, *extra: str) -> str:
        done = self.running.run(
            [
                "bash",
                str(REPOSITORY / "deploy" / "leave-node.sh"),
                "--state-dir",
                STATE_DIR,
                *extra,
            ],
            env=self.script_environment(),
            timeout=180,
        )
        return done.stdout + done.stderr

    # -- what the tests read -----------------------------------------------------------------

    def state_file(self, name: str) -> Path:
        """A file of the node's state directory (join-node.sh's), as the host sees it."""
        return self.workdir / "var-lib-gridweave" / "node" / name

    @property
    def vpn_ip(self) -> str:
        return str(json.loads(self.state_file("node.json").read_text())["vpn_ip"])

    def ray_worker_mode(self) -> str:
        """``container <image>`` or ``process: <why>`` (the K3s agent stand-in's choice)."""
        path = self.workdir / "var-lib-gridweave" / "standin" / "ray-worker.mode"
        return path.read_text().strip() if path.exists() else ""

    def ray_worker_log(self, lines: int = 40) -> str:
        """The tail of the K3s agent stand-in's output and of the Ray worker's raylet log
        (for a failure's message)."""
        if self.machine is None or not self.machine.alive:
            return f"{self.name} is not running"
        # the worker's session lies under the head's temporary directory, in the node's /tmp
        script = (
            f"tail -n {lines} /run/gridweave-standin/units/k3s-agent.service.log; "
            "logs=$(dirname \"$(find /tmp -path '*/logs/raylet.out' | head -n 1)\"); "
            f'echo "-- $logs/raylet.out:"; tail -n {lines} "$logs/raylet.out"; '
            f"echo '-- raylet.err:'; tail -n {lines} \"$logs/raylet.err\""
        )
        done = self.machine.run(["sh", "-c", script], check=False)
        return done.stdout + done.stderr

    def systemctl_log(self) -> list[tuple[float, str]]:
        """The calls the systemctl stand-in received, in order: (epoch seconds, arguments)."""
        path = self.workdir / "var-lib-gridweave" / "standin" / "systemctl.log"
        if not path.exists():
            return []
        calls = []
        for line in path.read_text().splitlines():
            at, call = line.split(" systemctl ", 1)
            calls.append((float(at), call))
        return calls

    def systemctl_calls(self) -> list[str]:
        """The calls the systemctl stand-in received, in order (arguments only)."""
        return [call for _, call in self.systemctl_log()]

    def kill(self) -> None:
        """The machine dies: SIGKILL to its init."""
        if self.machine is not None:
            self.machine.kill()

    def stop(self) -> None:
        if self.machine is not None:
            self.machine.stop()
