"""The job sandbox for tests: the real runtime (runc) and the default image, and a way to run
one function in a container the way a worker does, without Ray."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cloudpickle

from job_gateway.sandbox.attempt import SandboxedJob, run_sandboxed
from job_gateway.sandbox.container import ContainerRun
from job_gateway.sandbox.images import UnpackedImage
from job_gateway.sandbox.settings import SandboxConfig, SandboxSettings
from tests.support.unavailable import fail_or_skip

__all__ = ["SandboxRun", "run_function", "sandbox_config", "stand_in_devices"]

ROOT = Path(__file__).resolve().parents[2]


class SandboxUnavailable(Exception):
    """runc or the default image is missing."""


def sandbox_config(**overrides: Any) -> SandboxConfig:
    """The node's sandbox as the gateway configures it (the default image built, cached, by
    ``tools/sandbox-image/build.sh``); a missing runtime or image fails under CI=true, else
    skips."""
    try:
        if os.geteuid() != 0:
            raise SandboxUnavailable("the sandbox's runtime runs as root")
        if shutil.which("runc") is None:
            raise SandboxUnavailable("no runc (make sandbox installs it)")
        built = subprocess.run(
            [str(ROOT / "tools/sandbox-image/build.sh")],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        if built.returncode != 0:
            raise SandboxUnavailable(f"the default image did not build: {built.stderr[-500:]}")
    except SandboxUnavailable as exc:
        fail_or_skip("job sandbox", exc)
    config = SandboxSettings(rootfs=Path(built.stdout.strip().splitlines()[-1])).config()
    return dataclasses.replace(config, **overrides)


@dataclass(frozen=True)
class SandboxRun:
    """A finished container: how it ended, what it printed, and the value it returned."""

    run: ContainerRun
    stdout: str
    stderr: str

    @property
    def value(self) -> Any:
        """The function's return value (the test unpickles its own function's result)."""
        assert self.run.header == {"status": "ok"}, (self.run, self.stderr)
        return cloudpickle.loads(self.run.payload)


def run_function(
    config: SandboxConfig,
    function: Callable[..., Any],
    *args: Any,
    user: str = "sandbox-test-a",
    vendor: str = "nvidia",
    gpu_indices: tuple[int, ...] = (0,),
    environment: dict[str, str] | None = None,
    image: UnpackedImage | None = None,
) -> SandboxRun:
    """Run ``function(*args)`` in a container of ``user`` (in ``image``, else the node's
    default image), as a worker would."""
    job = SandboxedJob(
        user_id=user,
        vendor=vendor,
        gpu_indices=gpu_indices,
        gpu_count=max(1, len(gpu_indices)),
        environment=environment or {"CUDA_VISIBLE_DEVICES": ",".join(map(str, gpu_indices))},
    )
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        run = run_sandboxed(
            config,
            job,
            function=cloudpickle.dumps(function),
            arguments=cloudpickle.dumps((args, {})),
            stdout=stdout.fileno(),
            stderr=stderr.fileno(),
            image=image,
        )
        stdout.seek(0)
        stderr.seek(0)
        return SandboxRun(run, stdout.read().decode(errors="replace"), stderr.read().decode())


@contextmanager
def stand_in_devices(names: list[str]) -> Iterator[Path]:
    """A device directory of character devices named like a node's GPU nodes (each a copy of
    /dev/null's node, so opening one works), outside any 0700 directory."""
    directory = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="gw-devices-"))
    directory.chmod(0o755)
    null = os.stat("/dev/null").st_rdev
    try:
        for name in names:
            path = directory / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.parent.chmod(0o755)
            os.mknod(path, 0o666 | 0o020000, null)  # S_IFCHR
            path.chmod(0o666)
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
