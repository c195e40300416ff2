"""What an endpoint's user code does in its container (pickled by value, as a user's module)."""

from __future__ import annotations

import asyncio
import os
import socket
from typing import Any

#: A server an image could run: answers every GET with JSON naming the path, and
#: ``/stream`` with three chunks (PORT from the environment, as the serving runner sets).
IMAGE_SERVER = """
import json, os, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        if self.path == "/stream":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for n in range(3):
                data = f"data: {n}\\n\\n".encode()
                self.wfile.write(f"{len(data):x}\\r\\n".encode() + data + b"\\r\\n")
                self.wfile.flush()
                time.sleep(0.05)
            self.wfile.write(b"0\\r\\n\\r\\n")
            return
        body = json.dumps({"path": self.path, "uid": os.getuid()}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
"""


class Calculator:
    """A user's endpoint class."""

    def __init__(self) -> None:
        self.offset = 10

    def add(self, a: int, b: int = 0) -> int:
        return a + b + self.offset

    def fail(self, message: str) -> None:
        raise ValueError(message)

    async def later(self, value: str) -> str:
        await asyncio.sleep(0.01)
        return value.upper()

    def view(self) -> dict[str, Any]:
        """Where the class runs: its interfaces, uid map, processes, and the host's files."""
        readable = []
        for path in ("/etc/shadow", "/proc/1/environ", "/var/lib/gridweave"):
            try:
                with open(path, "rb") as handle:
                    handle.read(1)
                readable.append(path)
            except OSError:
                pass
        return {
            "interfaces": [name for _, name in socket.if_nameindex()],
            "uid_map": open("/proc/self/uid_map").read().split(),
            "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
            "readable": readable,
        }

    def sleep_marked(self, marker: str) -> None:
        """Leave a process marked ``marker`` running (it must die with the container)."""
        import subprocess

        subprocess.Popen(["python3", "-c", "import time; time.sleep(600)", marker])


class Broken:
    """A class whose constructor fails."""

    def __init__(self) -> None:
        raise RuntimeError("the model file is missing")
