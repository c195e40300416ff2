"""A user's own project for tests: a package of two modules in a folder of its own, imported
as a script beside it would import it (its folder on ``sys.path``), never installed."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

__all__ = ["FAILING_LINE", "user_package"]

#: The line of ``helpers.explode`` that raises (a remote traceback should show it).
FAILING_LINE = 'raise ValueError(f"bad value {x}: scaled {scaled(x)}")'

_FILES = {
    "__init__.py": '"""The user\'s own package."""\n',
    "helpers.py": f'''
        """Helpers the functions module imports."""

        SCALE = 3


        def scaled(x):
            return x * SCALE


        def explode(x):
            {FAILING_LINE}
    ''',
    "funcs.py": '''
        """The functions the user runs remotely."""

        from {package} import helpers
        from {package}.helpers import scaled


        class Point:
            def __init__(self, x):
                self.x = x

            def norm(self):
                return abs(self.x)


        def compute(x):
            """scaled(x) + SCALE: both from the package's other module."""
            return scaled(x) + helpers.SCALE


        def fail(x):
            return helpers.explode(x)


        def point_norm(point):
            return point.norm() * helpers.SCALE


        class Scaler:
            """Served as an endpoint: a negative input raises in the other module."""

            def scale(self, x):
                if x < 0:
                    return helpers.explode(x)
                return scaled(x)
    ''',
}


@contextmanager
def user_package(root: Path, name: str = "myproject") -> Iterator[ModuleType]:
    """Write the package ``name`` under ``root`` and import its ``funcs`` module; on exit,
    forget it (``sys.modules``, ``sys.path``)."""
    package = root / name
    package.mkdir(parents=True)
    for file_name, text in _FILES.items():
        body = textwrap.dedent(text).lstrip().replace("{package}", name)
        (package / file_name).write_text(body)
    sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    try:
        yield importlib.import_module(f"{name}.funcs")
    finally:
        sys.path.remove(str(root))
        for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
            del sys.modules[module]
