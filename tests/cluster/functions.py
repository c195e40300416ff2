"""The functions and endpoint class the cluster tests run remotely (pickled by value)."""

from __future__ import annotations

import os
import socket
import time


def where_am_i() -> dict[str, object]:
    """What a job sees of where it runs: its container's name and its network."""
    return {
        "hostname": socket.gethostname(),
        "interfaces": sorted(os.listdir("/sys/class/net")),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }


def reverse(data: bytes) -> bytes:
    return data[::-1]


def sleep_for(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def add(x: int, y: int) -> int:
    return x + y


class Greeter:
    """An endpoint's class: each call answers where its replica's container runs."""

    def greet(self, name: str) -> dict[str, str]:
        return {"greeting": f"hello {name}", "container": socket.gethostname()}
