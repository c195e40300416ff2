"""A job's image on its node: pulled with its owner's token, unpacked once per digest, cached.

The worker is handed an :class:`ImagePull` (the pinned reference, the registry as the node
reaches it, and a short-lived pull token of the job's owner, which the gateway asked the
platform for). :func:`unpacked_image` answers the image's root filesystem from the node's
cache, or pulls it first:

- **pull**: ``skopeo copy docker://<registry>/<repository>@sha256:<hex> oci:<tmp>:image`` with
  the token; skopeo checks every blob and the manifest against the pinned digest;
- **unpack**: ``umoci unpack`` (as root: the files keep the image's owners, which the
  container's user namespace shows as nobody, so the image's permissions decide what a
  job may read, as in the default image); the mount points every container needs are made;
- **cache**: ``<image_dir>/<hex>/{rootfs,image.json}``, renamed into place only when whole,
  so a pull cut off leaves nothing a job could run; one pull per digest at a time on a node
  (``<image_dir>/.<hex>.pull``, locked), others wait and find it unpacked.

Every container holds a shared lock on its image's ``.lock`` while it lives
(:func:`hold_image`); :func:`evict_images` removes the least recently used images beyond the
cache's size, never one a container holds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ImagePull",
    "ImagePullFailed",
    "UnpackedImage",
    "evict_images",
    "hold_image",
    "unpacked_image",
]

#: The longest a pull and unpack may take (a large image over a slow link).
PULL_TIMEOUT_SECONDS = 1800
#: Directories every job container mounts over (the image's root is read-only in it).
_MOUNT_POINTS = ("scratch", "opt/gridweave", "run/gridweave", "tmp", "proc", "sys", "dev")
_LOCK = ".lock"


class ImagePullFailed(Exception):
    """The image could not be pulled or unpacked, or cannot run a job; the message says why."""


@dataclass(frozen=True, slots=True)
class ImagePull:
    """What a node needs to pull a job's image: the pinned reference
    (``<repository>@sha256:<hex>``), the registry (``host:port``), the owner's token, and
    whether the registry is reached over plain HTTP (a registry inside the cluster's VPN)."""

    image: str
    registry: str
    token: str
    plain_http: bool = True

    @property
    def digest_hex(self) -> str:
        """The manifest digest's hex digits: the image's name in the cache."""
        return self.image.rpartition("@sha256:")[2]


@dataclass(frozen=True, slots=True)
class UnpackedImage:
    """An image ready to run: its root filesystem, the environment of its config, how long
    this call spent pulling it (0 when it came from the cache), its size, and its command
    (entrypoint then command: what an endpoint serving the image runs)."""

    rootfs: Path
    environment: tuple[tuple[str, str], ...]
    pull_seconds: float = 0.0
    size_bytes: int = 0
    command: tuple[str, ...] = ()


def unpacked_image(image_dir: Path, pull: ImagePull) -> UnpackedImage:
    """The image of ``pull`` from the node's cache, pulled and unpacked first if missing.

    Raises:
        ImagePullFailed: the registry refused or lacked it, the unpack failed, or the image
            has no ``python3`` (the runner needs one).
    """
    digest = pull.digest_hex
    target = image_dir / digest
    cached = _read_cached(target)
    if cached is not None:
        return cached
    image_dir.mkdir(parents=True, exist_ok=True)
    image_dir.chmod(0o755)  # every job's uid passes through to its image's root
    started = time.monotonic()
    with _exclusive(image_dir / f".{digest}.pull"):
        cached = _read_cached(target)  # another worker pulled it while this one waited
        if cached is not None:
            return cached
        size = _pull_and_unpack(image_dir, pull, target)
    unpacked = _read_cached(target)
    assert unpacked is not None
    return dataclasses.replace(unpacked, pull_seconds=time.monotonic() - started, size_bytes=size)


def hold_image(rootfs: Path) -> int | None:
    """A shared lock on a cached image for as long as the returned descriptor is open (None:
    not an image of the cache, e.g. the node's default image)."""
    lock = rootfs.parent / _LOCK
    try:
        fd = os.open(lock, os.O_RDONLY)
    except FileNotFoundError:
        return None
    fcntl.flock(fd, fcntl.LOCK_SH)
    os.utime(lock)  # its last use: eviction goes by it
    return fd


def evict_images(image_dir: Path, *, max_bytes: int) -> list[str]:
    """Delete the least recently used images until the cache holds ``max_bytes`` at most,
    skipping any a container holds; the digests deleted."""
    entries = []
    for entry in image_dir.iterdir() if image_dir.is_dir() else ():
        lock = entry / _LOCK
        if entry.name.startswith(".") or not lock.exists():
            continue
        entries.append((lock.stat().st_mtime, entry, _size(entry)))
    total = sum(size for _, _, size in entries)
    deleted = []
    for _, entry, size in sorted(entries):
        if total <= max_bytes:
            break
        fd = os.open(entry / _LOCK, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue  # a container runs it
        try:
            doomed = image_dir / f".{entry.name}.evicted-{os.getpid()}"
            entry.rename(doomed)  # no new job finds it from here on
        finally:
            os.close(fd)
        shutil.rmtree(doomed, ignore_errors=True)
        total -= size
        deleted.append(entry.name)
    return deleted


# -- helpers ---------------------------------------------------------------------------------


def _read_cached(target: Path) -> UnpackedImage | None:
    try:
        config = json.loads((target / "image.json").read_text())
    except (OSError, ValueError):
        return None
    environment = tuple((str(name), str(value)) for name, value in config.get("env", []))
    return UnpackedImage(
        target / "rootfs",
        environment,
        size_bytes=int(config.get("size", 0)),
        command=tuple(str(word) for word in config.get("command", [])),
    )


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _pull_and_unpack(image_dir: Path, pull: ImagePull, target: Path) -> int:
    """Pull and unpack into a temporary directory beside ``target``, then rename it there;
    the size of the unpacked root filesystem."""
    work = Path(tempfile.mkdtemp(dir=image_dir, prefix=f".{pull.digest_hex}.work-"))
    try:
        layout = work / "layout"
        _run(
            [
                "skopeo",
                "--insecure-policy",  # the digest pins what is accepted
                "copy",
                "--quiet",
                f"--src-tls-verify={'false' if pull.plain_http else 'true'}",
                "--src-registry-token",
                pull.token,
                f"docker://{pull.registry}/{pull.image}",
                f"oci:{layout}:image",
            ],
            what=f"pulling {pull.image}",
        )
        bundle = work / "bundle"
        _run(["umoci", "unpack", "--image", f"{layout}:image", str(bundle)], what="unpacking")
        rootfs = bundle / "rootfs"
        environment, command = _image_process(bundle / "config.json")
        _check_runnable(rootfs, environment, pull.image)
        for point in _MOUNT_POINTS:
            (rootfs / point).mkdir(parents=True, exist_ok=True)
        final = work / "image"
        final.mkdir()
        rootfs.rename(final / "rootfs")
        size = _size(final / "rootfs")
        (final / "image.json").write_text(
            json.dumps({"image": pull.image, "env": environment, "size": size, "command": command})
        )
        (final / _LOCK).touch()
        final.chmod(0o755)
        final.rename(target)
        return size
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(command: list[str], *, what: str) -> None:
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=PULL_TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired:
        raise ImagePullFailed(f"{what} took longer than {PULL_TIMEOUT_SECONDS} s") from None
    except OSError as error:
        raise ImagePullFailed(f"{what}: {command[0]} could not run ({error})") from None
    if done.returncode != 0:
        words = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise ImagePullFailed(f"{what} failed: {words[-1][:400] if words else done.returncode}")


def _image_process(config: Path) -> tuple[list[list[str]], list[str]]:
    """The image's environment and command (entrypoint then command) as umoci wrote them
    into the runtime configuration."""
    try:
        process = json.loads(config.read_text()).get("process", {})
    except (OSError, ValueError):
        return [], []
    pairs = []
    for entry in process.get("env", []):
        name, equals, value = str(entry).partition("=")
        if equals and name:
            pairs.append([name, value])
    return pairs, [str(word) for word in process.get("args", [])]


def _check_runnable(rootfs: Path, environment: list[list[str]], image: str) -> None:
    """The runner needs a ``python3`` on the image's PATH."""
    path = dict((name, value) for name, value in environment).get("PATH", "/usr/bin:/bin")
    for directory in path.split(":"):
        if directory.startswith("/") and os.path.lexists(rootfs / directory[1:] / "python3"):
            return
    raise ImagePullFailed(
        f"image {image} has no python3 on its PATH: build it FROM gridweave/python:3.11, "
        "whose Python is the cluster's"
    )


def _size(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total
