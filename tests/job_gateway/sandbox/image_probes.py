"""What a job does inside its own image (pickled by value, as a user's module)."""

from __future__ import annotations

import sys


def read_marker_and_import() -> tuple[str, str, bool]:
    """What a job in alice's image sees: her file, her module, and a read-only root."""
    import importlib.util

    sys.path.insert(0, "/opt/tools")
    spec = importlib.util.find_spec("hello")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        with open("/opt/tools/marker.txt", "a") as handle:
            handle.write("changed")
        writable = True
    except OSError:
        writable = False
    with open("/opt/tools/marker.txt") as handle:
        return handle.read(), module.GREETING, writable


def tools_present() -> bool:
    """Whether alice's files are in the image the job runs in."""
    import os

    return os.path.exists("/opt/tools/marker.txt")
