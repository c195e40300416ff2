"""What the kernel says of a container's memory cgroup: how many processes it OOM-killed.

The runtime puts a container's cgroup at ``cgroupsPath`` relative to the cgroup of the
process that started it (the worker), in every hierarchy: under cgroup v2 one tree, under
v1 (or the hybrid layout) the ``memory`` hierarchy's. Either way the kernel counts OOM
kills (``oom_kill`` in ``memory.events`` on v2, in ``memory.oom_control`` on v1).
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "cgroup_processes",
    "container_cgroups",
    "memory_cgroup",
    "oom_kills",
    "remove_cgroup",
]

_ROOT = Path("/sys/fs/cgroup")


def memory_cgroup(relative: str, *, proc_cgroup: str | None = None) -> tuple[Path, str] | None:
    """The directory of the memory cgroup ``relative`` to this process's, and the file
    that counts its OOM kills; None when the system shows no memory controller."""
    text = proc_cgroup if proc_cgroup is not None else Path("/proc/self/cgroup").read_text()
    unified: str | None = None
    for line in text.splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return _ROOT / "memory" / path.lstrip("/") / relative, "memory.oom_control"
        if controllers == "":
            unified = path
    if unified is None:
        return None
    base = _ROOT / "unified" if (_ROOT / "unified").is_dir() else _ROOT
    return base / unified.lstrip("/") / relative, "memory.events"


def oom_kills(relative: str) -> int:
    """How many processes of the cgroup ``relative`` to this process's the OOM killer
    took; 0 when it cannot be read."""
    found = memory_cgroup(relative)
    if found is None:
        return 0
    directory, counter = found
    try:
        text = (directory / counter).read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == "oom_kill":
            return int(value)
    return 0


def cgroup_processes(relative: str) -> int:
    """How many processes the cgroup ``relative`` to this process's holds; -1 when it
    cannot be read."""
    found = memory_cgroup(relative)
    if found is None:
        return -1
    try:
        return len((found[0] / "cgroup.procs").read_text().split())
    except OSError:
        return -1


def _hierarchies(relative: str) -> list[Path]:
    """The directory of the cgroup ``relative`` to this process's in every hierarchy."""
    found = []
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            base = _ROOT / "unified" if (_ROOT / "unified").is_dir() else _ROOT
        else:
            base = _ROOT / controllers.split(",")[0].removeprefix("name=")
        found.append(base / path.lstrip("/") / relative)
    return found


def container_cgroups(relative: str) -> set[str]:
    """The names of the cgroups under ``relative`` (to this process's), in any hierarchy."""
    names: set[str] = set()
    for directory in _hierarchies(relative):
        try:
            names.update(path.name for path in directory.iterdir() if path.is_dir())
        except OSError:
            continue
    return names


def remove_cgroup(relative: str) -> None:
    """Remove the (empty) cgroup ``relative`` to this process's from every hierarchy."""
    for directory in _hierarchies(relative):
        try:
            directory.rmdir()
        except OSError:
            continue
