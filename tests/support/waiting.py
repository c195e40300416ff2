"""Waiting in tests for what another process makes true shortly (an informer's cache, a
worker's record): poll, and fail naming what never came."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["wait_until"]


def wait_until(check: Callable[[], bool], timeout: float = 30.0, what: str = "") -> None:
    """Poll ``check`` every 0.05 s until it is true; ``AssertionError`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        time.sleep(0.05)
