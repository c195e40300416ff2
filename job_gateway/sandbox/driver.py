"""The NVIDIA driver's user-space part, for a container given NVIDIA GPUs.

A CUDA program needs, besides the device nodes, the libraries of the node's kernel driver
(``libcuda.so.1``, ``libnvidia-ml.so.1``, the PTX JIT compiler...), which must match that
driver exactly and so are never in an image: NVIDIA's container toolkit binds them in from
the host, and so does this. :func:`driver_dir` gathers the node's copies (the files named
by :data:`DRIVER_FILES` in the configured directories, ``nvidia-smi`` among them) into one
directory under the sandbox's state directory, made once per driver (by the files' names,
sizes and times), readable by every container's uid; a container with an NVIDIA GPU mounts
it read-only at :data:`~job_gateway.sandbox.oci.DRIVER_DIR`, first on ``LD_LIBRARY_PATH``
and ``PATH``. AMD needs nothing of the host's: ROCm's user-space libraries come with the
framework (torch's ROCm wheels carry them) and talk to ``/dev/kfd`` directly.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from fnmatch import fnmatch
from pathlib import Path

__all__ = ["DRIVER_FILES", "driver_dir"]

#: The driver's files a CUDA program may load or run (as NVIDIA's container toolkit's list
#: for compute and utility): its libraries in every version-suffixed name, and nvidia-smi.
DRIVER_FILES = (
    "libcuda.so*",
    "libcudadebugger.so*",
    "libnvidia-ml.so*",
    "libnvidia-ptxjitcompiler.so*",
    "libnvidia-nvvm.so*",
    "libnvidia-gpucomp.so*",
    "libnvidia-allocator.so*",
    "libnvidia-cfg.so*",
    "libnvidia-opencl.so*",
    "nvidia-smi",
)

_made: dict[tuple[Path, tuple[Path, ...]], Path | None] = {}


def driver_dir(state_dir: Path, search: Sequence[Path]) -> Path | None:
    """The node's driver files gathered for containers; None where the node has none (a
    simulated GPU, or no NVIDIA driver installed)."""
    key = (state_dir, tuple(search))
    if key in _made:
        made = _made[key]
        if made is None or made.is_dir():
            return made
    found = _driver_files(search)
    if not found:
        _made[key] = None
        return None
    digest = hashlib.sha256()
    for name, path in sorted(found.items()):
        info = path.lstat()
        digest.update(f"{name}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
    target = state_dir / f"driver-{digest.hexdigest()[:16]}"
    if not target.is_dir():
        state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = Path(tempfile.mkdtemp(dir=state_dir, prefix=".driver-"))
        for name, path in found.items():
            _copy(path, partial / name, found)
        partial.chmod(0o755)  # every container's uid reads it, through the mount
        try:
            os.rename(partial, target)
        except OSError:  # another worker made it first
            shutil.rmtree(partial, ignore_errors=True)
    _made[key] = target
    return target


def _driver_files(search: Sequence[Path]) -> dict[str, Path]:
    """The driver's files by name, the first directory of ``search`` that has one winning."""
    found: dict[str, Path] = {}
    for directory in search:
        try:
            entries = sorted(directory.iterdir())
        except OSError:
            continue
        for path in entries:
            if path.name not in found and any(fnmatch(path.name, p) for p in DRIVER_FILES):
                if path.is_file():  # a link to a file, or the file; never a dangling link
                    found[path.name] = path
    return found


def _copy(source: Path, target: Path, found: dict[str, Path]) -> None:
    """A link to another gathered file stays a link (``libcuda.so.1`` to its version); any
    other is copied whole, readable by all (and runnable where it was)."""
    if source.is_symlink():
        pointed = os.readlink(source)
        if "/" not in pointed and pointed in found:
            target.symlink_to(pointed)
            return
    shutil.copyfile(source, target)
    runnable = source.stat().st_mode & 0o111
    target.chmod(0o755 if runnable else 0o644)
