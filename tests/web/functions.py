"""A job for the dashboard's browser tests: it prints a stamped line every half second."""

from __future__ import annotations

import time


def ticker(seconds: float) -> int:
    """Print ``tick <n> at <unix time>`` every 0.5 s for ``seconds``; the count printed."""
    count = 0
    deadline = time.time() + seconds
    while time.time() < deadline:
        print(f"tick {count} at {time.time():.3f}", flush=True)
        count += 1
        time.sleep(0.5)
    return count


class Greeter:
    """A user's class served as the dashboard test's endpoint: ``greet`` is its route, and
    prints ``greeting <name>`` (its replica's logs on the endpoint's page)."""

    def greet(self, name: str) -> str:
        print(f"greeting {name}", flush=True)
        return f"hello, {name}"
