"""Container names, the runtime's state root, and what dead workers left behind.

A container is named ``gw-<worker pid>-<n>-<ns>`` (:func:`container_name`), so
:func:`sweep_orphans` knows whose it is: every worker kills and deletes the containers whose
worker process is gone (the runtime's state, the bundle, the cgroups a runtime killed mid-way
left, what was staged for them, their veth pairs)."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

from job_gateway.sandbox.cgroups import container_cgroups, remove_cgroup
from job_gateway.sandbox.network import sweep_links

__all__ = [
    "STAGING_DIR",
    "container_name",
    "delete_container",
    "runtime_root",
    "sweep_orphans",
]

_CONTAINER_PREFIX = "gw"
_counter = 0
_counter_lock = threading.Lock()

#: Under the sandbox's state directory: what was made for one container outside its bundle
#: before it started (a transformers replica's model copy), in a directory named as it.
STAGING_DIR = "staging"


def sweep_orphans(runtime: str, state_dir: Path) -> list[str]:
    """Kill and delete the containers whose worker process is gone (the runtime's state,
    the bundle, and the cgroups a runtime killed mid-way left); their names."""
    root = runtime_root(state_dir)
    if runtime == "none":
        return []
    names: set[str] = set()
    if root.exists():
        listed = subprocess.run(
            [runtime, "--root", str(root), "list", "--quiet"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        names.update(listed.stdout.split())
    bundles = state_dir / "bundles"
    if bundles.is_dir():
        names.update(path.name for path in bundles.iterdir())
    names.update(container_cgroups("gridweave"))
    swept = []
    for name in sorted(names):
        owner = _owner_pid(name)
        if owner is None or _alive(owner):
            continue
        if root.exists():
            subprocess.run(
                [runtime, "--root", str(root), "delete", "--force", name],
                capture_output=True,
                timeout=30,
                check=False,
            )
        shutil.rmtree(bundles / name, ignore_errors=True)
        remove_cgroup(f"gridweave/{name}")
        swept.append(name)
    staged = state_dir / STAGING_DIR
    if staged.is_dir():
        for path in staged.iterdir():
            if _orphaned(path.name):
                shutil.rmtree(path, ignore_errors=True)
                swept.append(path.name)
    for name in sweep_links(state_dir, _orphaned):  # a link whose container never started
        if name not in swept:
            swept.append(name)
    return swept


def delete_container(runtime: str, state_dir: Path, name: str) -> None:
    """Delete the container ``name`` of ``runtime`` (whose state is under ``state_dir``),
    killing whatever runs in it."""
    subprocess.run(
        [runtime, "--root", str(runtime_root(state_dir)), "delete", "--force", name],
        capture_output=True,
        timeout=30,
        check=False,
    )


def runtime_root(state_dir: Path) -> Path:
    """Where the OCI runtime keeps its containers' state (``--root``)."""
    return state_dir / "runtime"


def container_name() -> str:
    """``gw-<worker pid>-<n>``: :func:`sweep_orphans` knows a container's worker by it."""
    global _counter
    with _counter_lock:
        _counter += 1
        return f"{_CONTAINER_PREFIX}-{os.getpid()}-{_counter}-{time.monotonic_ns() % 10**9}"


def _owner_pid(name: str) -> int | None:
    parts = name.split("-")
    if len(parts) < 3 or parts[0] != _CONTAINER_PREFIX or not parts[1].isdigit():
        return None
    return int(parts[1])


def _orphaned(name: str) -> bool:
    owner = _owner_pid(name)
    return owner is not None and not _alive(owner)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
