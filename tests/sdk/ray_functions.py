"""Functions the SDK's Ray tests run; pickled by value, as a user's own module would be."""

from __future__ import annotations

import os


def shout(word: str, times: int = 1) -> str:
    print(f"shouting {word}")
    return (word.upper() + "!") * times


def visible_devices() -> str | None:
    return os.environ.get("CUDA_VISIBLE_DEVICES")


def reciprocal(x: float) -> float:
    return 1 / x


def allocate(megabytes: int) -> int:
    """Hold ``megabytes`` of touched memory."""
    held = [bytearray(1024 * 1024) for _ in range(megabytes)]
    return len(held)


def square_positive(x: int) -> int:
    """``x`` squared; a negative raises."""
    if x < 0:
        raise ValueError(f"negative: {x}")
    return x * x


def power(base: int, exponent: int) -> int:
    return int(base**exponent)


def nap(seconds: float) -> float:
    import time

    time.sleep(seconds)
    return seconds
