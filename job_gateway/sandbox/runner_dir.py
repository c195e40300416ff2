"""The runner's directory on a node: what every container mounts read-only at /opt/gridweave.

``gridweave_runner.py`` (a copy of :mod:`job_gateway.sandbox.runner`),
``gridweave_serve.py`` (of :mod:`job_gateway.sandbox.serve_runner`),
``gridweave_transformers.py`` (of :mod:`job_gateway.sandbox.transformers_server`) and the
cloudpickle package the worker itself has, so a job's image needs only a Python 3 (no Ray,
no Gridweave, no cloudpickle of its own); an empty ``env``, where a job's ``pip=``
environment (:mod:`job_gateway.sandbox.pip_envs`) or a transformers replica's packages are
mounted, an empty ``driver`` for the NVIDIA driver's files (:mod:`job_gateway.sandbox.driver`)
and an empty ``model``, where that replica's model is (a mount point must exist in the
read-only tree it is mounted into). Made once per content under the sandbox's state
directory, written whole before it is renamed into place.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import cloudpickle

from job_gateway.sandbox import runner, serve_runner

__all__ = ["MOUNT_POINTS", "runner_dir"]

#: The empty directories made for mounts: ``env`` (:data:`~job_gateway.sandbox.oci.ENV_DIR`),
#: ``driver`` (:data:`~job_gateway.sandbox.oci.DRIVER_DIR`) and ``model``.
MOUNT_POINTS = ("env", "driver", "model")
#: The transformers mode's server (never imported here: it needs torch).
_TRANSFORMERS_SERVER = Path(__file__).with_name("transformers_server.py")

_made: dict[Path, Path] = {}


def runner_dir(state_dir: Path) -> Path:
    """The node's runner directory for this version of the runner and cloudpickle."""
    made = _made.get(state_dir)
    if made is not None and made.is_dir():
        return made
    sources = {
        "gridweave_runner.py": Path(runner.__file__),
        "gridweave_serve.py": Path(serve_runner.__file__),
        "gridweave_transformers.py": _TRANSFORMERS_SERVER,
    }
    package = Path(cloudpickle.__file__).parent
    digest = hashlib.sha256()
    for source in sources.values():
        digest.update(source.read_bytes())
    digest.update(cloudpickle.__version__.encode())
    for mount_point in MOUNT_POINTS:
        digest.update(f"{mount_point}/".encode())
    target = state_dir / f"runner-{digest.hexdigest()[:16]}"
    if not target.is_dir():
        state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = Path(tempfile.mkdtemp(dir=state_dir, prefix=".runner-"))
        for name, source in sources.items():
            shutil.copyfile(source, partial / name)
        shutil.copytree(package, partial / "cloudpickle", ignore=shutil.ignore_patterns("*.pyc"))
        for mount_point in MOUNT_POINTS:
            (partial / mount_point).mkdir()
        for path in [partial, *partial.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)  # readable by every user's uid
        try:
            os.rename(partial, target)
        except OSError:  # another worker made it first
            shutil.rmtree(partial, ignore_errors=True)
    state_dir.chmod(0o711)  # containers' uids may pass through to the runner, not list
    _made[state_dir] = target
    return target
