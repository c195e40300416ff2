"""Functions ``gridweave run`` runs in the CLI's tests (imported by path, as a user's file)."""

from __future__ import annotations

import gridweave as gw

OFFSET = 100  # a global of the file: sent with the function by value


@gw.function(vram="8GiB", vendor="amd", timeout="1m")
def add(a: int, b: int = 0, *, label: str = "sum") -> dict[str, object]:
    return {label: a + b + OFFSET}


@gw.function(vram="8GiB", vendor="amd", timeout="1m")
def fail(x: int) -> int:
    if x < 0:
        raise ValueError(f"negative: {x}")
    return x


def plain(text: str) -> str:
    return text.upper()


@gw.function(vram="8GiB", vendor="amd", timeout="1m")
def unjsonable() -> object:
    return {1, 2}


NOT_A_FUNCTION = 3
