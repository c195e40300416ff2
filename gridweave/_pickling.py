"""What the SDK sends of the user's code: pickles that carry the user's own modules.

cloudpickle sends a function by reference (``module.name``) when its module is imported,
and by value otherwise. A worker has the installed packages and the standard library, but
not the user's own files: a function imported from ``myfuncs.py`` beside the script failed
remotely with ``ModuleNotFoundError: No module named 'myfuncs'``. So every module the
pickle names that is the user's own (a file outside the installed packages and the
standard library, see :func:`is_user_module`) is pickled by value for the duration of the
``dumps``: its functions and classes travel with their code, as ``gridweave run`` sends its
file. Installed packages (editable ones included) and the standard library always travel
by reference.

A function pickled by value keeps its file's name here (cloudpickle would write
``<dynamic-code>``), and :func:`dumps_program` appends the source of those files after the
pickle as ``SOURCES_MARKER`` + JSON ``{filename: source}``: the job's runner registers them
with ``linecache``, so a remote traceback shows the user's lines. ``pickle.loads`` ignores
what follows a pickle, so the trailer is invisible to a reader that does not look for it.
"""

from __future__ import annotations

import functools
import importlib.metadata
import io
import json
import linecache
import os
import sys
import sysconfig
import threading
import types
from collections.abc import Iterable
from typing import Any

import cloudpickle

__all__ = [
    "MAX_SOURCE_BYTES",
    "SOURCES_MARKER",
    "dumps",
    "dumps_program",
    "is_user_module",
]

#: What separates the pickle from the sources of its by-value files (the runner's too).
SOURCES_MARKER = b"\n#gridweave-sources\n"
#: The sources sent with one program at most (files past it are left out, whole).
MAX_SOURCE_BYTES = 2 * 1024 * 1024
#: How often a pickle is made again with newly found user modules by value, at most.
_MAX_ROUNDS = 8
# register_pickle_by_value is process-wide: one dumps at a time changes it.
_registry_lock = threading.RLock()


class _Pickler(cloudpickle.Pickler):  # type: ignore[misc]  # cloudpickle is untyped
    """cloudpickle's pickler, noting the modules it names and keeping code's file names."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file)
        self.modules: set[str] = set()
        self.filenames: set[str] = set()
        self._copies: dict[int, types.CodeType] = {}  # kept alive: their ids stay theirs

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, types.ModuleType):
            self.modules.add(obj.__name__)
        elif isinstance(obj, type | types.FunctionType):
            module = getattr(obj, "__module__", None)
            if isinstance(module, str):
                self.modules.add(module)
        elif isinstance(obj, types.CodeType) and id(obj) not in self._copies:
            # Only code pickled by value gets here. cloudpickle writes it with the file name
            # "<dynamic-code>": write a copy of it so, then the call that puts the name back
            # (the copy, not obj: pickle would take obj's memo entry over the call's value).
            self.filenames.add(obj.co_filename)
            copy = obj.replace()
            self._copies[id(copy)] = copy
            rename = functools.partial(types.CodeType.replace, co_filename=obj.co_filename)
            return rename, (copy,)
        return super().reducer_override(obj)


def is_user_module(name: str) -> bool:
    """Whether module ``name`` is the user's own: imported from a file or folder that is
    neither the standard library nor an installed distribution (editable ones included)."""
    if name == "__main__" or name.startswith("__mp_"):
        return False  # already pickled by value by cloudpickle
    top = name.partition(".")[0]
    if top in sys.builtin_module_names or top in sys.stdlib_module_names:
        return False
    module = sys.modules.get(name)
    if module is None or top in _installed_top_levels():
        return False
    location = _module_location(module)
    if location is None:
        return False
    return not any(_is_within(location, root) for root in _installed_roots())


def _module_location(module: types.ModuleType) -> str | None:
    file = getattr(module, "__file__", None)
    if isinstance(file, str):
        return os.path.realpath(file)
    paths = getattr(module, "__path__", None)  # a namespace package: its first folder
    for path in list(paths or []):
        if isinstance(path, str):
            return os.path.realpath(path)
    return None


def _is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


@functools.cache
def _installed_top_levels() -> frozenset[str]:
    """The import names the installed distributions provide."""
    return frozenset(importlib.metadata.packages_distributions())


@functools.cache
def _installed_roots() -> tuple[str, ...]:
    """The folders of the standard library and of installed packages."""
    roots: set[str] = set()
    for scheme in (None, *_user_scheme()):
        paths = sysconfig.get_paths(scheme) if scheme else sysconfig.get_paths()
        for key in ("stdlib", "platstdlib", "purelib", "platlib"):
            if key in paths:
                roots.add(os.path.realpath(paths[key]))
    for path in sys.path:
        if path and os.path.basename(path) in ("site-packages", "dist-packages"):
            roots.add(os.path.realpath(path))
    return tuple(sorted(roots))


def _user_scheme() -> tuple[str, ...]:
    scheme = f"{os.name}_user"
    return (scheme,) if scheme in sysconfig.get_scheme_names() else ()


def _dump(obj: Any) -> tuple[bytes, _Pickler]:
    buffer = io.BytesIO()
    pickler = _Pickler(buffer)
    pickler.dump(obj)
    return buffer.getvalue(), pickler


def _pickle_with_user_modules(obj: Any) -> tuple[bytes, set[str]]:
    """``obj`` pickled with the user's own modules by value; the by-value code's files."""
    with _registry_lock:
        added: list[types.ModuleType] = []
        try:
            for _ in range(_MAX_ROUNDS):
                data, pickler = _dump(obj)
                found = [
                    sys.modules[name]
                    for name in sorted(pickler.modules)
                    if is_user_module(name) and not _registered(name)
                ]
                if not found:
                    return data, pickler.filenames
                for module in found:
                    cloudpickle.register_pickle_by_value(module)
                    added.append(module)
            return data, pickler.filenames
        finally:
            for module in added:
                cloudpickle.unregister_pickle_by_value(module)


def _registered(name: str) -> bool:
    registry = cloudpickle.list_registry_pickle_by_value()
    parts = name.split(".")
    return any(".".join(parts[:end]) in registry for end in range(1, len(parts) + 1))


def dumps(obj: Any) -> bytes:
    """``obj`` pickled with cloudpickle, the user's own modules it names by value."""
    return _pickle_with_user_modules(obj)[0]


def dumps_program(obj: Any) -> bytes:
    """A function or class to run remotely: :func:`dumps`, then the sources of the files
    its by-value code came from (see the module's docstring)."""
    data, filenames = _pickle_with_user_modules(obj)
    sources = _sources(sorted(filenames))
    if not sources:
        return data
    return data + SOURCES_MARKER + json.dumps(sources).encode()


def _sources(filenames: Iterable[str]) -> dict[str, str]:
    """Each file's text as ``linecache`` has it here (a notebook's cells included), while
    the total stays under ``MAX_SOURCE_BYTES``."""
    sources: dict[str, str] = {}
    total = 0
    for filename in filenames:
        text = "".join(linecache.getlines(filename))
        size = len(text.encode(errors="replace"))
        if not text or total + size > MAX_SOURCE_BYTES:
            continue
        sources[filename] = text
        total += size
    return sources
