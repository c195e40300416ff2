"""A new user's own functions for the all-in-one test; pickled by value, as a script's are."""

from __future__ import annotations

import time


def square(x: int) -> int:
    print(f"squaring {x}")
    return x * x


def refuse(reason: str) -> None:
    raise ValueError(f"refused: {reason}")


def sleep_for(seconds: float) -> float:
    print("sleeping", flush=True)
    time.sleep(seconds)
    return seconds
