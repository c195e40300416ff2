"""The master of the test cluster: the all-in-one platform in a machine of its own.

The master machine (network, mount and UTS namespaces; the host's pid namespace, so
``gridweave up`` is stopped with Ctrl-C as a user stops it) holds the WireGuard hub as
``deploy/deploy.sh`` makes it (``wg0`` on the mesh's first address, port 51820, forwarding
on; userspace WireGuard, its socket in the machine's own ``/run``), an S3 API on the mesh
(moto's server: the object store that the workers of every node reach, the MinIO a real
master would run) and ``gridweave up`` with every service on all its addresses, the gateway
placing on its own machine and on the joined nodes (``local+registry``), its Ray head on
the mesh address.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gridweave_runtime.local_ray import ray_temp_dir
from gridweave_runtime.storage import S3ObjectStore, StorageConfig
from tests.support.allinone import AllInOneProcess
from tests.support.cluster.layout import Layout
from tests.support.cluster.machine import Machine, MachineSpec, entered_network

__all__ = ["Master", "MASTER_NODE"]

#: The checkout the tests run from.
_REPOSITORY = Path(__file__).resolve().parents[3]
#: The master's own node (the all-in-one's machine, where its Ray head runs).
MASTER_NODE = "master"
S3_PORT = 9000
S3_ACCESS_KEY = "gridweave-cluster"
S3_SECRET_KEY = "gridweave-cluster-secret"
S3_BUCKET = "gridweave"


def private_mounts(workdir: Path, *, own_tmp: bool) -> list[dict[str, str]]:
    """A machine's own ``/etc`` (an overlay on the host's), ``/var/lib/gridweave`` (the
    sandbox's state, a node's state and Docker) and ``/run``; a node also gets its own
    ``/tmp`` and ``/dev/shm`` (it sees none of the master's files)."""
    for part in ("etc-upper", "etc-work", "var-lib-gridweave"):
        (workdir / part).mkdir(parents=True, exist_ok=True)
    mounts = [
        {
            "type": "overlay",
            "target": "/etc",
            "upper": str(workdir / "etc-upper"),
            "work": str(workdir / "etc-work"),
        },
        {
            "type": "bind",
            "source": str(workdir / "var-lib-gridweave"),
            "target": "/var/lib/gridweave",
        },
        {"type": "tmpfs", "target": "/run", "options": "mode=755,size=256m"},
    ]
    if own_tmp:
        kept = _kept_under_tmp()
        staged = [f"/run/gridweave-host-tmp-{i}" for i in range(len(kept))]
        mounts += [
            # what the machine runs from (the repository, its virtualenv) when it lies under
            # the host's /tmp: staged in /run before the machine's own /tmp hides it, then
            # put back at the same path
            *(
                {"type": "bind", "source": str(path), "target": stage}
                for path, stage in zip(kept, staged, strict=True)
            ),
            {"type": "tmpfs", "target": "/dev/shm", "options": "mode=1777,size=1g"},
            {"type": "tmpfs", "target": "/tmp", "options": "mode=1777,size=2g"},
            *(
                {"type": "bind", "source": stage, "target": str(path)}
                for path, stage in zip(kept, staged, strict=True)
            ),
        ]
    return mounts


def _kept_under_tmp() -> list[Path]:
    """The repository and the Python environment the tests run from, where they lie under
    ``/tmp`` (a clone there): a node with its own ``/tmp`` must still see them."""
    paths = sorted({_REPOSITORY, Path(sys.prefix).resolve()})
    under_tmp = [path for path in paths if path.is_relative_to("/tmp")]
    return [
        path
        for path in under_tmp
        if not any(path.is_relative_to(o) and path != o for o in under_tmp)
    ]


class Master:
    """The master machine and what runs on it; :meth:`start` and :meth:`stop`."""

    def __init__(self, workdir: Path, layout: Layout, *, cgroup: str) -> None:
        self.workdir = workdir
        self.layout = layout
        self.cgroup = cgroup
        self.machine: Machine | None = None
        self.platform: AllInOneProcess | None = None
        self.public_key = ""

    # -- start ------------------------------------------------------------------------------

    def start_machine(self) -> Machine:
        spec = MachineSpec(
            hostname=MASTER_NODE,
            pid_namespace=False,
            mounts=private_mounts(self.workdir, own_tmp=False),
            cgroup=self.cgroup,
        )
        self.machine = Machine(spec, self.workdir)
        return self.machine

    def start_services(self, environment: dict[str, str]) -> None:
        """The hub, the S3 API, then ``gridweave up`` (which waits until every service
        answers)."""
        self._wireguard_hub()
        self._s3()
        self.platform = AllInOneProcess(
            self.workdir / "allinone",
            port_offset=0,
            command_prefix=self.running.nsenter(workdir="/"),
            environment=self.platform_environment() | environment,
        )
        self.platform.__enter__()

    @property
    def running(self) -> Machine:
        assert self.machine is not None, "the master machine is not started"
        return self.machine

    def _wireguard_hub(self) -> None:
        layout = self.layout
        machine = self.running
        private = machine.run(["wg", "genkey"]).stdout.strip()
        self.public_key = machine.run(["wg", "pubkey"], input=private + "\n").stdout.strip()
        config = (
            "[Interface]\n"
            f"PrivateKey = {private}\n"
            f"Address = {layout.master_vpn_ip}/{layout.mesh.prefixlen}\n"
            f"ListenPort = {layout.wireguard_port}\n"
        )
        machine.run(
            ["sh", "-c", "umask 077 && mkdir -p /etc/wireguard && cat > /etc/wireguard/wg0.conf"],
            input=config,
        )
        machine.run(["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"])  # this namespace's own
        machine.run(["wg-quick", "up", "wg0"])

    def _s3(self) -> None:
        machine = self.running
        machine.popen(
            [sys.executable, "-m", "moto.server", "-H", "0.0.0.0", "-p", str(S3_PORT)],
            log=self.workdir / "s3.log",
        )
        with entered_network(machine):
            _wait_port(self.layout.master_vpn_ip, S3_PORT, what="the S3 API")
            S3ObjectStore(self.storage_config()).ensure_bucket()

    def storage_config(self) -> StorageConfig:
        return StorageConfig(
            root="/nonexistent",
            s3_endpoint=f"http://{self.layout.master_vpn_ip}:{S3_PORT}",
            s3_access_key=S3_ACCESS_KEY,
            s3_secret_key=S3_SECRET_KEY,
            s3_bucket=S3_BUCKET,
        )

    def platform_environment(self) -> dict[str, str]:
        """What the master's ``gridweave up`` runs with, besides the all-in-one's own."""
        layout = self.layout
        return {
            "GRIDWEAVE_HOST": "0.0.0.0",
            # the gateway: this machine's GPU and the joined nodes', its Ray head on the mesh
            "GATEWAY_NODE_NAME": MASTER_NODE,
            "GATEWAY_INVENTORY_SOURCE": "local+registry",
            "GATEWAY_RAY_NODE_IP": layout.master_vpn_ip,
            "GATEWAY_INVENTORY_REFRESH_SECONDS": "1",
            "GATEWAY_NODE_LOST_GRACE_SECONDS": "2",
            # kuberay-service: the mesh it hands out and keeps (wg0's peers)
            "KUBERAY_MESH_CIDR": str(layout.mesh),
            "KUBERAY_MASTER_VPN_IP": layout.master_vpn_ip,
            "KUBERAY_WIREGUARD_ENDPOINT": f"{layout.master_lan_ip}:{layout.wireguard_port}",
            "KUBERAY_WIREGUARD_PUBLIC_KEY": self.public_key,
            "KUBERAY_WIREGUARD_INTERFACE": "wg0",
            "KUBERAY_MESH_SYNC_PERIOD_SECONDS": "5",
            # what a node's K3s agent would join; the agent is a stand-in (standins/k3s)
            "KUBERAY_K3S_URL": f"https://{layout.master_vpn_ip}:6443",
            "KUBERAY_K3S_TOKEN": "k3s-stand-in-token",
            "KUBERAY_HEARTBEAT_INTERVAL_SECONDS": "1",
            "KUBERAY_HEARTBEAT_TIMEOUT_SECONDS": "4",
            # the object store every node's workers reach over the mesh
            "S3_ENDPOINT": f"http://{layout.master_vpn_ip}:{S3_PORT}",
            "S3_ACCESS_KEY": S3_ACCESS_KEY,
            "S3_SECRET_KEY": S3_SECRET_KEY,
            "S3_BUCKET": S3_BUCKET,
            # a 50 MB argument travels base64-encoded in the submission
            "PLATFORM_MAX_SUBMISSION_BYTES": str(160 * 2**20),
        }

    # -- what the nodes and the tests need ----------------------------------------------------

    @property
    def kuberay_url(self) -> str:
        """Where joining nodes reach kuberay-service: the master's LAN address."""
        return f"http://{self.layout.master_lan_ip}:8800"

    @property
    def ray_address(self) -> str:
        return f"{self.layout.master_vpn_ip}:6380"

    def ray_token_path(self) -> Path:
        """The file of the head's Ray token (``gridweave_runtime``'s local head makes it)."""
        assert self.platform is not None
        temp_dir = ray_temp_dir(self.platform.state_dir)
        return temp_dir.with_name(temp_dir.name + ".auth-token")

    def ray_token(self) -> str:
        """The head's Ray token (what KubeRay would give the worker pods)."""
        return self.ray_token_path().read_text()

    @property
    def config_file(self) -> Path:
        """The CLI's configuration with the first admin's key."""
        assert self.platform is not None
        return self.platform.config_file

    def admin_api_key(self) -> str:
        """The first admin's API key (``gridweave up`` wrote it to the CLI's configuration)."""
        return str(tomllib.loads(self.config_file.read_text())["api_key"])

    @property
    def platform_url(self) -> str:
        """The platform as a client on the master reaches it."""
        return "http://127.0.0.1:8100"

    def cli_environment(self) -> dict[str, str]:
        """The ``gridweave`` command as the admin, inside the master."""
        keep = {k: v for k, v in os.environ.items() if not k.startswith("GRIDWEAVE_")}
        return keep | {"GRIDWEAVE_CONFIG": str(self.config_file), "COLUMNS": "200"}

    @contextmanager
    def network(self) -> Iterator[None]:
        """This thread in the master's network (the SDK and clients made here reach it)."""
        with entered_network(self.running):
            yield

    # -- stop -------------------------------------------------------------------------------

    def stop(self) -> None:
        try:
            if self.platform is not None:
                self.platform.__exit__(None, None, None)
        finally:
            if self.machine is not None:
                self.machine.stop()
            if self.platform is not None:  # a long state path puts Ray's directory in /tmp
                temp_dir = ray_temp_dir(self.platform.state_dir)
                if not temp_dir.is_relative_to(self.workdir):
                    shutil.rmtree(temp_dir, ignore_errors=True)
                    self.ray_token_path().unlink(missing_ok=True)


def _wait_port(host: str, port: int, *, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} did not answer on {host}:{port}") from None
            time.sleep(0.2)
