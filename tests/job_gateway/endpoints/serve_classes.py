"""Users' classes served by custom endpoints in the tests (pickled by value, as the SDK does)."""

from __future__ import annotations

import os
import socket
import time


class Greeter:
    """Public methods are routes; the underscore one is not."""

    def __init__(self) -> None:
        self.greeted = 0

    def greet(self, name: str) -> str:
        self.greeted += 1
        return f"hello {name}"

    async def add(self, a: int, b: int) -> int:
        return a + b

    def where(self) -> dict[str, str | None]:
        """What the class sees of its placement: its GPUs' variables, its container's
        name (which carries its replica's pid), and whether Ray is reachable at all."""
        names = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")
        seen: dict[str, str | None] = {name: os.environ.get(name) for name in names}
        seen["hostname"] = socket.gethostname()
        try:
            import ray  # noqa: F401

            seen["ray"] = "importable"
        except ImportError:
            seen["ray"] = None
        return seen

    def slow(self, seconds: float) -> float:
        time.sleep(seconds)
        return seconds

    def fail(self) -> None:
        raise ValueError("refused on purpose")

    def _private(self) -> str:
        return "never a route"


class BrokenOnLoad:
    """A class whose construction fails: the endpoint cannot come up."""

    def __init__(self) -> None:
        raise RuntimeError("the model file is missing")

    def call(self) -> str:
        return "unreachable"


class Talker:
    """Prints what it is told (stdout) and warns on stderr: its replica's logs."""

    def __init__(self) -> None:
        print("talker ready", flush=True)

    def say(self, text: str) -> str:
        print(text, flush=True)
        import sys

        print(f"warned: {text}", file=sys.stderr, flush=True)
        return text


class SlowToLoad:
    """A class whose construction takes longer than any deploy timeout of the tests."""

    def __init__(self) -> None:
        time.sleep(600)

    def call(self) -> str:
        return "unreachable"


class UsesItsPackage:
    """Answers with a module only its endpoint's pip= requirements install."""

    def __init__(self) -> None:
        import gridweave_probe_greeting  # type: ignore[import-not-found]

        self.package = gridweave_probe_greeting

    def greeting(self) -> dict[str, str]:
        return {"greeting": self.package.GREETING, "file": self.package.__file__}


class Hog:
    """Holds as much memory as it is asked for (its container's limit stops it)."""

    def __init__(self) -> None:
        self.held: list[bytearray] = []

    def allocate(self, mib: int) -> int:
        block = bytearray(mib * 1024 * 1024)
        for offset in range(0, len(block), 4096):  # touched: resident, not just reserved
            block[offset] = 1
        self.held.append(block)
        return sum(len(b) for b in self.held) // (1024 * 1024)
