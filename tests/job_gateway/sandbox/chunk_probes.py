"""Functions a map runs on its inputs in a container (pickled by value, as a user's module)."""

from __future__ import annotations

import os


def square_unless_three(x: int) -> int:
    """``x`` squared; 3 always raises."""
    if x == 3:
        raise ValueError("three is refused")
    return x * x


def fails_first_time(x: int) -> int:
    """Raises on an input's first call (a file in /scratch remembers it), then answers."""
    marker = f"/scratch/seen-{x}"
    if not os.path.exists(marker):
        open(marker, "w").close()
        raise RuntimeError(f"first try of {x}")
    return x + 100


def dies_on_two(x: int) -> int:
    """``x``, but 2 kills its own process (the user's code ending itself)."""
    if x == 2:
        os.kill(os.getpid(), 9)
    return x


def sleeps_on_two(x: int) -> int:
    """``x``, but 2 sleeps long enough to be stopped from outside."""
    if x == 2:
        import time

        time.sleep(60)
    return x
