"""A job's ``pip=`` environment on its node: built once, in a container, then mounted read-only.

:func:`pip_environment` answers the environment of a job's requirements in its image from
the node's cache (``<pip dir>/<key>/site``), or builds it first. The key is the SHA-256 of
the image (the job's pinned ``spec.image``, else the default image's build), the Python
the image runs (the name its ``python3`` resolves to) and the requirements (normalized by
``packaging``, sorted): one environment per node for every job, of any user, that asks for
the same list in the same image.

- **the build** runs ``python3 -m pip install --target /opt/gridweave/env --no-cache-dir
  --disable-pip-version-check -r <file>`` in a container of the job's owner (its uid), in
  the job's image: installing an sdist runs its ``setup.py``, so it is user code like any
  other. The container is the sandbox's (no capability, the image's root read-only, limits
  on memory, CPU and pids, no GPU), with the egress network (:mod:`.network`: a build
  needs the index, whatever ``GATEWAY_JOB_NETWORK`` says), the build directory its only
  writable mount besides its scratch, the requirements and the node's CA bundle (and a
  local find-links directory) read-only under ``/scratch/.gridweave``, the node's index
  settings as pip's environment, and a time limit past which it is deleted;
- **its output** (pip's progress) goes to the job's stderr, so the user reads it as the
  job's log; a failed build raises :class:`PipInstallFailed` with pip's last error lines;
- **the cache**: the build directory is given to root, its modes made read-only for
  others, and it is renamed into place only when whole (a build cut off leaves nothing a
  job could mount); one build per key at a time on a node (``.<key>.build``, locked), others
  wait and find it built. Every container holds a shared lock on its environment
  (:func:`~job_gateway.sandbox.images.hold_image`, as on an image) and the least recently
  used environments no container holds go past ``GATEWAY_SANDBOX_PIP_CACHE_GB``
  (:func:`~job_gateway.sandbox.images.evict_images`, which reads the same layout).
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import hashlib
import json
import os
import select
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement

from job_gateway.sandbox.config import SandboxConfig
from job_gateway.sandbox.container import ContainerSpec, network_link, runtime_command
from job_gateway.sandbox.container_names import container_name, delete_container
from job_gateway.sandbox.images import UnpackedImage, evict_images, hold_image
from job_gateway.sandbox.network import release
from job_gateway.sandbox.oci import ENV_DIR, ContainerLimits
from job_gateway.sandbox.runner_dir import runner_dir
from job_gateway.sandbox.uids import user_uid

__all__ = ["PipEnvironment", "PipInstallFailed", "environment_key", "pip_environment"]

#: Where a build finds its inputs (a read-only mount in its scratch).
INPUTS_DIR = "/scratch/.gridweave"
_LOCK = ".lock"
_TAIL_BYTES = 64 * 1024
_MAX_MESSAGE = 480


class PipInstallFailed(Exception):
    """pip could not install the job's requirements; the message carries pip's last error
    lines."""


@dataclass(frozen=True, slots=True)
class PipEnvironment:
    """A built environment: its ``site`` directory on the node (what containers mount), its
    key, and how long this call spent building it (0 when it came from the cache)."""

    site: Path
    key: str
    build_seconds: float = 0.0


def environment_key(requirements: Sequence[str], *, image: str, python: str) -> str:
    """The environment's name in the cache: one per image, Python and list."""
    identity = {"image": image, "python": python, "requirements": _normalized(requirements)}
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:32]


def pip_environment(
    config: SandboxConfig,
    user_id: str,
    requirements: Sequence[str],
    *,
    output: int,
    image: UnpackedImage | None = None,
    image_name: str | None = None,
) -> PipEnvironment:
    """The environment of ``requirements`` in ``image`` (else the node's default image),
    from the node's cache or built now in a container of ``user_id``; what the build
    printed goes to ``output``.

    Raises:
        PipInstallFailed: pip failed (its last error lines), or ran past its time.
        NetworkUnavailable: the build's container could not be given its way out.
    """
    rootfs = (image.rootfs if image is not None else config.rootfs).resolve()
    # a pinned image is its digest; the default image its build's directory (base-<hash>)
    identity = image_name or rootfs.parent.name
    key = environment_key(requirements, image=identity, python=_python_of(rootfs))
    directory = config.pip.directory
    target = directory / key
    if (target / "env.json").is_file():
        os.utime(target / _LOCK)  # its last use: eviction goes by it
        return PipEnvironment(target / "site", key)
    if config.runtime == "none":
        raise PipInstallFailed(
            "pip= environments are built in a container, and this node runs jobs without "
            "one (GATEWAY_SANDBOX_RUNTIME=none)"
        )
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)  # every job's uid passes through to its environment
    started = time.monotonic()
    with _exclusive(directory / f".{key}.build"):
        if (target / "env.json").is_file():  # another worker built it while this one waited
            return PipEnvironment(target / "site", key)
        for leftover in directory.glob(f".{key}.work-*"):  # a build whose worker died
            shutil.rmtree(leftover, ignore_errors=True)
        listed = ", ".join(_normalized(requirements))
        _say(output, f"gridweave: installing {listed} (pip environment {key[:12]})")
        _build(config, user_id, requirements, rootfs, image, target, output)
    seconds = time.monotonic() - started
    _say(output, f"gridweave: built pip environment {key[:12]} in {seconds:.1f} s")
    hold = hold_image(target / "site")  # never the one just built
    try:
        evict_images(directory, max_bytes=int(config.pip.cache_gb * 1e9))
    finally:
        if hold is not None:
            os.close(hold)
    return PipEnvironment(target / "site", key, seconds)


# -- the build -------------------------------------------------------------------------------


def _build(
    config: SandboxConfig,
    user_id: str,
    requirements: Sequence[str],
    rootfs: Path,
    image: UnpackedImage | None,
    target: Path,
    output: int,
) -> None:
    """Install into a directory beside ``target`` in a container, then rename it there."""
    directory = target.parent
    work = Path(tempfile.mkdtemp(dir=directory, prefix=f".{target.name}.work-"))
    try:
        work.chmod(0o711)
        uid = user_uid(config.state_dir, user_id)
        site = work / "site"
        site.mkdir()
        os.chown(site, uid, uid)  # the build's container root writes it
        inputs = work / "inputs"
        inputs.mkdir(mode=0o755)
        (inputs / "requirements.txt").write_text("".join(f"{r}\n" for r in requirements))
        spec, mounts = _build_container(config, uid, rootfs, image, site, inputs)
        for path in inputs.iterdir():
            path.chmod(0o755 if path.is_dir() else 0o644)
        code, tail = _run_build(spec, mounts, output, config.pip.build_seconds)
        if code != 0:
            raise PipInstallFailed(_failure(code, tail, config.pip.build_seconds))
        shutil.rmtree(inputs)
        _give_to_root(site)
        (work / "env.json").write_text(
            json.dumps(
                {
                    "requirements": _normalized(requirements),
                    "rootfs": str(rootfs),
                    "built_at": time.time(),
                }
            )
        )
        (work / _LOCK).touch()
        work.chmod(0o755)
        work.rename(target)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _build_container(
    config: SandboxConfig,
    uid: int,
    rootfs: Path,
    image: UnpackedImage | None,
    site: Path,
    inputs: Path,
) -> tuple[ContainerSpec, list[dict[str, object]]]:
    """The build's container (the sandbox's, with egress and no GPU) and its mounts: the
    build directory writable at the environment's place, the inputs read-only."""
    pip = config.pip
    environment = {
        "PIP_NO_INPUT": "1",
        "PIP_ROOT_USER_ACTION": "ignore",  # root in its container only: the job's uid
        "PIP_DEFAULT_TIMEOUT": f"{pip.request_timeout_seconds:g}",
    }
    mounts: list[dict[str, object]] = [
        _bind(site, ENV_DIR, writable=True),
        _bind(inputs, INPUTS_DIR, writable=False),
    ]
    if pip.index_url:
        environment["PIP_INDEX_URL"] = pip.index_url
    if pip.ca_bundle is not None and pip.ca_bundle.is_file():
        (inputs / "ca-certificates.crt").touch()  # the mount point, in a read-only tree
        mounts.append(_bind(pip.ca_bundle, f"{INPUTS_DIR}/ca-certificates.crt", writable=False))
        environment["PIP_CERT"] = f"{INPUTS_DIR}/ca-certificates.crt"
    if pip.find_links and Path(pip.find_links).is_dir():
        (inputs / "find-links").mkdir()
        mounts.append(_bind(Path(pip.find_links), f"{INPUTS_DIR}/find-links", writable=False))
        environment["PIP_FIND_LINKS"] = f"{INPUTS_DIR}/find-links"
    elif pip.find_links and "://" in pip.find_links:
        environment["PIP_FIND_LINKS"] = pip.find_links
    spec = ContainerSpec(
        runtime=config.runtime,
        state_dir=config.state_dir,
        rootfs=rootfs,
        runner_dir=runner_dir(config.state_dir),
        host_uid=uid,
        limits=ContainerLimits(
            memory_mb=pip.memory_mb,
            cpus=config.cpus_per_gpu,
            pids=config.pids,
            scratch_mb=max(64, pip.memory_mb // 2),
        ),
        environment=tuple(sorted(environment.items())),
        image_environment=image.environment if image is not None else (),
        network=config.egress,  # a build always reaches the index
    )
    return spec, mounts


def _run_build(
    spec: ContainerSpec, mounts: list[dict[str, object]], output: int, seconds: int
) -> tuple[int | None, bytes]:
    """Run pip in a container of ``spec`` until it ends or ``seconds`` pass, copying what it
    prints to ``output``; its exit code (None: cut off) and its output's last bytes."""
    name = container_name()
    bundle = spec.state_dir / "bundles" / name
    bundle.mkdir(parents=True, mode=0o700)
    link = None
    reader, writer = os.pipe()
    try:
        link = network_link(spec, name)
        command, environment = runtime_command(
            spec,
            name,
            bundle,
            f"gridweave/{name}",
            module="pip",
            args=_pip_arguments(),
            mounts=mounts,
            network=link,
        )
        pid = os.posix_spawnp(
            command[0],
            command,
            environment,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_DUP2, writer, 1),
                (os.POSIX_SPAWN_DUP2, writer, 2),
                (os.POSIX_SPAWN_OPEN, 3, os.devnull, os.O_RDONLY, 0),  # --preserve-fds 1
            ],
        )
        os.close(writer)
        writer = -1
        tail = _copy_until_done(reader, output, time.monotonic() + seconds)
        if tail is None:  # past its time: the container and everything in it go
            delete_container(spec.runtime, spec.state_dir, name)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
        _, status = os.waitpid(pid, 0)
        code = None if tail is None else os.waitstatus_to_exitcode(status)
        return code, tail or b""
    finally:
        os.close(reader)
        if writer >= 0:
            os.close(writer)
        delete_container(spec.runtime, spec.state_dir, name)
        shutil.rmtree(bundle, ignore_errors=True)
        if link is not None:
            release(spec.state_dir, link)


def _copy_until_done(reader: int, output: int, deadline: float) -> bytes | None:
    """Copy from ``reader`` to ``output`` until its end; the last bytes read, None past the
    deadline."""
    tail: collections.deque[bytes] = collections.deque()
    kept = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([reader], [], [], min(left, 1.0))
        if not ready:
            continue
        chunk = os.read(reader, 65536)
        if not chunk:
            return b"".join(tail)
        with contextlib.suppress(OSError):
            os.write(output, chunk)
        tail.append(chunk)
        kept += len(chunk)
        while kept - len(tail[0]) >= _TAIL_BYTES:
            kept -= len(tail.popleft())


def _pip_arguments() -> list[str]:
    return [
        "install",
        "--target",
        ENV_DIR,
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--no-input",
        "--progress-bar",
        "off",
        "--no-warn-script-location",
        "-r",
        f"{INPUTS_DIR}/requirements.txt",
    ]


def _failure(code: int | None, tail: bytes, seconds: int) -> str:
    """The job's message: pip's error lines (else its last lines), bounded."""
    if code is None:
        return f"pip ran past the build's limit of {seconds} s and was stopped"
    lines = [line.strip() for line in tail.decode(errors="replace").splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")] or lines[-3:]
    words = " ".join(errors) or f"pip exited with code {code}"
    if len(words) > _MAX_MESSAGE:
        words = words[: _MAX_MESSAGE - 3] + "..."
    return f"pip could not install the requirements: {words}"


# -- helpers ---------------------------------------------------------------------------------


def _normalized(requirements: Sequence[str]) -> list[str]:
    return sorted({str(Requirement(requirement)) for requirement in requirements})


def _python_of(rootfs: Path) -> str:
    """The name the image's ``python3`` resolves to (``python3.11``), links followed inside
    the image."""
    for directory in ("usr/local/bin", "usr/bin", "bin"):
        path = rootfs / directory / "python3"
        if not os.path.lexists(path):
            continue
        name = "python3"
        for _ in range(16):
            if not path.is_symlink():
                break
            link = os.readlink(path)
            name = Path(link).name
            path = rootfs / link.lstrip("/") if link.startswith("/") else path.parent / link
        return name
    return "python3"


def _give_to_root(site: Path) -> None:
    """Make the build's files root's, readable by every uid and writable by none (never
    following a link the build made)."""
    for root, directories, files in os.walk(site):
        for name in (*directories, *files):
            path = os.path.join(root, name)
            os.chown(path, 0, 0, follow_symlinks=False)
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                continue
            executable = stat.S_ISDIR(info.st_mode) or info.st_mode & 0o111
            os.chmod(path, 0o755 if executable else 0o644)
    os.chown(site, 0, 0)
    site.chmod(0o755)


def _bind(source: Path, destination: str, *, writable: bool) -> dict[str, object]:
    options = ["rbind", "nosuid", "nodev"] + ([] if writable else ["ro"])
    return {"destination": destination, "type": "bind", "source": str(source), "options": options}


def _say(output: int, line: str) -> None:
    with contextlib.suppress(OSError):
        os.write(output, f"{line}\n".encode())


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
