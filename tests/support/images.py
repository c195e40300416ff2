"""Gridweave's images built on a Docker daemon of the test's own.

:func:`image_inputs` runs the builds the images need from Debian's and PyPI's package
registries (``tools/images``: the base image, the wheels, Docker's buildx and compose v2
plugins; the registry binary; the default job image), each cached outside the repository.
:func:`private_docker` starts Debian's ``dockerd`` in a machine of its own (network, mount,
UTS and pid namespaces, :mod:`tests.support.cluster.machine`), its data and socket under the
test's directory: the host's default daemon is never used, and its iptables rules, bridge
and mounts die with the machine. On the way out every container, network and volume is
removed, the daemon stopped, and ``AssertionError`` names whatever it left on the host.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.cluster.leaks import host_leaks, host_snapshot
from tests.support.cluster.machine import Machine, MachineSpec
from tests.support.cluster.master import private_mounts

__all__ = [
    "BASE_IMAGE",
    "JOB_IMAGE",
    "PrivateDocker",
    "REGISTRY_IMAGE",
    "REPOSITORY",
    "WHEELS_IMAGE",
    "ImageInputs",
    "image_inputs",
    "private_docker",
]

REPOSITORY = Path(__file__).resolve().parents[2]
#: the local images the Dockerfiles' build arguments name in the tests
BASE_IMAGE = "gridweave-local/base:bookworm"
JOB_IMAGE = "gridweave-local/job-python:3.11"
WHEELS_IMAGE = "gridweave-local/wheels:latest"
REGISTRY_IMAGE = "gridweave-local/registry:latest"
_DOCKER_START_S = 60.0
_BUILD_S = 1200.0


@dataclass(frozen=True)
class ImageInputs:
    """What the builds start from, each a path in a cache outside the repository."""

    base_tar: Path
    wheels: Path
    docker_config: Path
    registry_dir: Path
    job_rootfs: Path


def image_inputs() -> ImageInputs:
    """Build (or find cached) everything the image builds need; raises on a failed build."""

    def output(*command: str) -> Path:
        done = subprocess.run(
            [*command], capture_output=True, text=True, timeout=_BUILD_S, check=False
        )
        if done.returncode != 0:
            raise AssertionError(f"{' '.join(command)} failed:\n{done.stderr[-4000:]}")
        return Path(done.stdout.strip().splitlines()[-1])

    tools = REPOSITORY / "tools"
    return ImageInputs(
        base_tar=output(str(tools / "images" / "build-base.sh")),
        wheels=output(str(tools / "images" / "wheels.sh")),
        docker_config=output(str(tools / "images" / "docker-plugins.sh")),
        registry_dir=output("bash", str(tools / "registry" / "build.sh")),
        job_rootfs=output(str(tools / "sandbox-image" / "build.sh")),
    )


class PrivateDocker:
    """A Docker daemon in a machine of its own; :meth:`docker` runs the CLI against it."""

    def __init__(self, workdir: Path, docker_config: Path) -> None:
        self.workdir = workdir
        self.id = secrets.token_hex(4)
        self.cgroup = f"gwc-{self.id}-images"
        self.socket = workdir / "docker.sock"
        self.docker_config = docker_config
        self.machine: Machine | None = None

    @property
    def environment(self) -> dict[str, str]:
        """The CLI's environment: this daemon, the cached plugins, BuildKit."""
        return {
            "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
            "HOME": str(self.workdir),
            "DOCKER_HOST": f"unix://{self.socket}",
            "DOCKER_CONFIG": str(self.docker_config),
            "DOCKER_BUILDKIT": "1",
            "BUILDKIT_PROGRESS": "plain",
        }

    def start(self) -> None:
        spec = MachineSpec(
            hostname="images",
            pid_namespace=True,
            mounts=private_mounts(self.workdir, own_tmp=False),
            cgroup=self.cgroup,
        )
        self.machine = Machine(spec, self.workdir)
        own = next(
            line.split(":", 2)[2]
            for line in Path("/proc/self/cgroup").read_text().splitlines()
            if line.split(":")[1] == "pids"
        )
        self.machine.popen(
            [
                "dockerd",
                f"--data-root={self.workdir / 'docker'}",
                "--exec-root=/run/docker",
                "--pidfile=/run/docker.pid",
                f"--host=unix://{self.socket}",
                # its containers' cgroups under the machine's: removed with it
                f"--cgroup-parent={own.rstrip('/')}/{self.cgroup}/docker",
                "--storage-driver=overlay2",
                "--log-level=warn",
            ],
            log=self.workdir / "dockerd.log",
        )
        deadline = time.monotonic() + _DOCKER_START_S
        while self.docker("info", check=False).returncode != 0:
            if time.monotonic() > deadline or not self.machine.alive:
                raise AssertionError(f"the private Docker daemon did not start:\n{self.log()}")
            time.sleep(0.5)

    def log(self) -> str:
        path = self.workdir / "dockerd.log"
        return path.read_text()[-3000:] if path.exists() else ""

    def docker(
        self,
        *args: str,
        input: bytes | None = None,
        timeout: float = 120.0,
        check: bool = True,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """``docker ARGS`` against this daemon; output as text."""
        done = subprocess.run(
            ["docker", *args],
            input=input,
            capture_output=True,
            timeout=timeout,
            check=False,
            cwd=cwd,
            env={**self.environment, **(env or {})},
        )
        result = subprocess.CompletedProcess(
            done.args,
            done.returncode,
            done.stdout.decode(errors="replace"),
            done.stderr.decode(errors="replace"),
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"docker {' '.join(args)} exited {done.returncode}:\n"
                f"{result.stdout[-4000:]}\n{result.stderr[-6000:]}"
            )
        return result

    def import_tree(self, source: Path, tag: str) -> None:
        """A directory's files (or a tarball's) as a one-layer image ``tag``."""
        if source.is_dir():
            tar = subprocess.run(
                ["tar", "-C", str(source), "--numeric-owner", "-c", "."],
                capture_output=True,
                check=True,
                timeout=_BUILD_S,
            )
            self.docker("import", "-", tag, input=tar.stdout, timeout=_BUILD_S)
        else:
            self.docker("import", str(source), tag, timeout=_BUILD_S)

    def files_image(self, source: Path, tag: str) -> None:
        """An image whose ``/`` holds ``source``'s files and nothing else (a build's input)."""
        self.docker("build", "-t", tag, "-f", "-", str(source), input=b"FROM scratch\nCOPY . /\n")

    def build(
        self, dockerfile: str, tag: str, arguments: Mapping[str, str], *, timeout: float = _BUILD_S
    ) -> subprocess.CompletedProcess[str]:
        """``docker build`` of the repository with ``dockerfile`` (relative to it)."""
        args: list[str] = []
        for name, value in arguments.items():
            args += ["--build-arg", f"{name}={value}"]
        return self.docker(
            "build", "-f", dockerfile, "-t", tag, *args, ".", cwd=REPOSITORY, timeout=timeout
        )

    def run_in(self, image: str, command: Sequence[str]) -> str:
        """``command``'s output in a throwaway container of ``image``."""
        return self.docker("run", "--rm", "--network=none", image, *command).stdout

    def remove_everything(self) -> None:
        """Every container, network and volume (compose's included)."""
        containers = self.docker("ps", "-aq", check=False).stdout.split()
        if containers:
            self.docker("rm", "-f", "-v", *containers, check=False, timeout=300)
        self.docker("network", "prune", "-f", check=False)
        self.docker("volume", "prune", "-f", "-a", check=False)

    def stop(self) -> None:
        if self.machine is None:
            return
        if self.machine.alive:
            self.remove_everything()
        self.machine.stop(timeout=60)


@contextmanager
def private_docker(docker_config: Path) -> Iterator[PrivateDocker]:
    """A started private daemon for the block; afterwards nothing of it is left."""
    before = host_snapshot()
    workdir = Path(tempfile.mkdtemp(prefix="gwi-"))
    daemon = PrivateDocker(workdir, docker_config)
    try:
        daemon.start()
        yield daemon
    finally:
        try:
            daemon.stop()
            inodes = [daemon.machine.net_inode] if daemon.machine else []
            leaks = host_leaks(before, workdir=workdir, cluster_id=daemon.id, net_inodes=inodes)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        assert not leaks, "the private Docker daemon left on the host:\n" + "\n".join(leaks)
