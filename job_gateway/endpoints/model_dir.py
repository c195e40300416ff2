"""An endpoint's model directory on the replica's node (the trusted side, no model code).

``spec.modelRef`` (or ``spec.model`` when it names a local directory) is a directory of the
node, or an object-store URI of a ``.tar``/``.zip`` archive of one; no model hub is asked.
:func:`resolve_model_dir` gives the directory as it is (an archive unpacked into a new
directory), for the ``vllm`` mode's child. :func:`stage_model_dir` gives one the container
of a ``transformers`` replica can read through its user namespace (where the host's files
are "other"): a directory every one of whose entries others may read is mounted as it is;
any other (a private directory, an unpacked archive) is a copy in ``staging``, owned by the
container's host uid, deleted with the replica. A link in the directory may name only what
lies inside it: one that leads elsewhere on the node is refused, never followed.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["ModelNotFound", "resolve_model_dir", "stage_model_dir"]


class ModelNotFound(RuntimeError):
    """The endpoint names no model directory, or one that does not exist."""


def resolve_model_dir(
    ref: str | None, read_object: Callable[[str], bytes], *, into: Path | None = None
) -> Path:
    """The local directory of the model: a path as given, or an archive unpacked ``into``
    a new directory (a temporary one when None).

    Raises:
        ModelNotFound: ``ref`` is None, or a local path that is not a directory.
    """
    if ref is None:
        raise ModelNotFound("the endpoint needs modelRef or a model directory")
    local = Path(ref.removeprefix("file://"))
    if local.is_dir():
        return local
    if "://" not in ref:
        raise ModelNotFound(f"the model directory {ref!r} does not exist")
    data = read_object(ref)
    target = Path(tempfile.mkdtemp(prefix="gw-model-", dir=into))
    if zipfile.is_zipfile(io.BytesIO(data)):
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            archive.extractall(target)
    else:
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            archive.extractall(target, filter="data")
    entries = [p for p in target.iterdir() if not p.name.startswith(".")]
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else target


def stage_model_dir(
    ref: str | None, read_object: Callable[[str], bytes], *, staging: Path, host_uid: int
) -> Path:
    """A directory of the model that the container's user (``host_uid``) can read.

    ``staging`` is this replica's own directory (made here, mode 0700; the caller deletes
    it): an archive is unpacked there, and a directory others may not read whole is copied
    there; both are then given to ``host_uid``.

    Raises:
        ModelNotFound: as :func:`resolve_model_dir`, or a link in it leads outside it.
    """
    staging.mkdir(parents=True, exist_ok=True, mode=0o700)
    directory = resolve_model_dir(ref, read_object, into=staging)
    mountable = _links_stay_inside(directory)
    if not directory.is_relative_to(staging):
        if mountable and _readable_by_others(directory):
            return directory
        directory = Path(shutil.copytree(directory, staging / "model", symlinks=False))
    for path in [staging, *staging.rglob("*")]:
        os.lchown(path, host_uid, host_uid)
    return directory


def _links_stay_inside(directory: Path) -> bool:
    """Whether the directory's links work as they are in a mount of it (all relative).

    Raises:
        ModelNotFound: a link leads outside the directory (or nowhere).
    """
    root = directory.resolve()
    relative = True
    for path in directory.rglob("*"):
        if not path.is_symlink():
            continue
        target = path.resolve()
        if not target.is_relative_to(root) or not target.exists():
            raise ModelNotFound(f"{path} links outside the model directory (to {target})")
        relative = relative and not os.readlink(path).startswith("/")
    return relative


def _readable_by_others(directory: Path) -> bool:
    """Whether every entry under ``directory`` (itself included) is readable by others, and
    every directory searchable (a link: what it names, checked where it lies)."""
    for path in [directory, *directory.rglob("*")]:
        try:
            mode = path.lstat().st_mode
        except OSError:
            return False
        if stat.S_ISLNK(mode):
            continue
        needed = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
        if mode & needed != needed:
            return False
    return True
