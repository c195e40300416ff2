"""Finding every place Python source could unpickle data, by reading it with ``ast``.

A *finding* is a reference to a loader (called or not: ``f = pickle.loads`` hands it on),
an import that binds one (``from pickle import loads as x``), a ``getattr`` that fetches
one by name, a dynamic import of an unpickling module, or ``numpy.load`` with
``allow_pickle`` not literally False. Names are resolved through the module's imports, so
aliases (``import cloudpickle as cp``, ``from ray import cloudpickle``) are followed.
Relative imports are the package's own modules, never a loader.

``ray.get`` counts: Ray's deserializer unpickles the values it fetches. ``ray.get_actor``
and the rest of Ray do not.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LOADERS", "Finding", "scan_file", "scan_source"]

#: Modules whose loaders unpickle (or, for marshal, load code objects likewise unchecked).
_PICKLE_LIKE = ("pickle", "_pickle", "cPickle", "cloudpickle", "ray.cloudpickle", "dill")
#: Every qualified name that loads pickled (or marshalled) data.
LOADERS: frozenset[str] = frozenset(
    {f"{module}.{name}" for module in _PICKLE_LIKE for name in ("load", "loads", "Unpickler")}
    | {
        "dill.load_session",
        "joblib.load",
        "marshal.load",
        "marshal.loads",
        "shelve.open",
        "shelve.Shelf",
        "shelve.DbfilenameShelf",
        "shelve.BsdDbShelf",
        "torch.load",
        "pandas.read_pickle",
        "ray.get",
    }
)
#: Loaders that unpickle only when asked to: (qualified name, keyword) -> unsafe unless False.
_OPT_IN = {"numpy.load": "allow_pickle"}
#: Modules a dynamic import may not fetch (their loaders would escape the name check).
_MODULES = frozenset({*_PICKLE_LIKE, "joblib", "marshal", "shelve"})
_DYNAMIC_IMPORTS = frozenset({"importlib.import_module", "builtins.__import__", "__import__"})


@dataclass(frozen=True, order=True)
class Finding:
    """One place that could unpickle: file, line, and what it is."""

    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def scan_file(path: Path, *, root: Path) -> list[Finding]:
    """The findings of one Python file, named relative to ``root``."""
    return scan_source(path.read_text(encoding="utf-8"), str(path.relative_to(root)))


def scan_source(source: str, name: str) -> list[Finding]:
    """The findings of Python ``source`` (``name`` is how they name the file)."""
    tree = ast.parse(source, filename=name)
    return sorted(_Scanner(name, _aliases(tree)).scan(tree))


def _aliases(tree: ast.Module) -> dict[str, str]:
    """What each imported name stands for, anywhere in the module (imports in functions too)."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname is not None:
                    aliases[alias.asname] = alias.name
                else:  # ``import ray.cloudpickle`` binds ``ray``
                    top = alias.name.split(".")[0]
                    aliases[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def _is_loader(qualified: str) -> bool:
    return qualified in LOADERS


class _Scanner:
    def __init__(self, name: str, aliases: dict[str, str]) -> None:
        self.name = name
        self.aliases = aliases

    def scan(self, tree: ast.Module) -> Iterator[Finding]:
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
                for alias in node.names:
                    qualified = f"{node.module}.{alias.name}"
                    if _is_loader(qualified):
                        yield self._found(node, f"imports {qualified}")
            elif isinstance(node, ast.Attribute | ast.Name) and isinstance(node.ctx, ast.Load):
                named = self.resolve(node)
                # only the whole name: ``ray.get`` once, never the ``ray`` inside it
                if named is not None and _is_loader(named):
                    yield self._found(node, f"uses {named}")
            elif isinstance(node, ast.Call):
                yield from self._call(node)

    def resolve(self, node: ast.expr) -> str | None:
        """The qualified name an expression names through the imports, if it does."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.aliases.get(node.id)
        if base is None:
            return node.id if node.id == "__import__" else None
        return ".".join([base, *reversed(parts)])

    def _call(self, call: ast.Call) -> Iterator[Finding]:
        target = self.resolve(call.func)
        if target in _OPT_IN:
            keyword = _OPT_IN[target]
            for argument in call.keywords:
                unsafe = not (
                    isinstance(argument.value, ast.Constant) and argument.value.value is False
                )
                if argument.arg == keyword and unsafe:
                    yield self._found(call, f"calls {target}({keyword}=...)")
                elif argument.arg is None:  # **options may carry it
                    yield self._found(call, f"calls {target}(**...) that may set {keyword}")
        elif isinstance(call.func, ast.Name) and call.func.id == "getattr":
            yield from self._getattr(call)
        elif target in _DYNAMIC_IMPORTS and call.args:
            module = call.args[0]
            if isinstance(module, ast.Constant) and module.value in _MODULES:
                yield self._found(call, f"imports {module.value} dynamically")

    def _getattr(self, call: ast.Call) -> Iterator[Finding]:
        if len(call.args) < 2:
            return
        owner = self.resolve(call.args[0])
        attribute = call.args[1]
        if owner is None or not isinstance(attribute, ast.Constant):
            return
        if not isinstance(attribute.value, str):
            return
        qualified = f"{owner}.{attribute.value}"
        if _is_loader(qualified):
            yield self._found(call, f"fetches {qualified} with getattr")

    def _found(self, node: ast.AST, what: str) -> Finding:
        return Finding(self.name, getattr(node, "lineno", 0), what)
