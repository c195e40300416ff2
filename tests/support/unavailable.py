"""What a test does when a real server it needs cannot be had."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import NoReturn, TypeVar

import pytest

T = TypeVar("T")


def fail_or_skip(what: str, exc: Exception) -> NoReturn:
    """A missing real server fails the run under CI=true; elsewhere it skips, loudly."""
    message = f"{what} unavailable: {exc}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message, pytrace=False)
    print(f"\n*** SKIPPING real-{what} tests: {message}\n")
    pytest.skip(message)


@contextmanager
def entered_or_skip(
    what: str, context: AbstractContextManager[T], unavailable: type[Exception]
) -> Iterator[T]:
    """``context`` (a real server) entered for the block; ``unavailable`` raised on entering
    it fails the run under CI=true, else skips (:func:`fail_or_skip`)."""
    try:
        started = context.__enter__()
    except unavailable as exc:
        fail_or_skip(what, exc)
    try:
        yield started
    finally:
        context.__exit__(None, None, None)
