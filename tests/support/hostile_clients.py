"""Hostile HTTP clients over raw sockets, run from processes of their own.

The clients send what no HTTP library would: a head of many megabytes, a body far past
any limit, a head dribbled a line at a time (slowloris). Each returns the status the server
answered, or None. ``attacking`` runs one kind of attack over and over from several
processes (so the attackers never compete with the test's own probes for the GIL) until
the block ends. Standard library only: each attacker process imports this module alone.
"""

from __future__ import annotations

import multiprocessing
import select
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

__all__ = [
    "HEALTH_PROBE",
    "attacking",
    "oversized_body",
    "oversized_head",
    "probe_health",
    "slow_head",
]

HEALTH_PROBE = "/healthz"
_CHUNK = 64 * 1024


def _status_of(received: bytes) -> int | None:
    if not received.startswith(b"HTTP/1.1 "):
        return None
    return int(received.split(b" ", 2)[1])


def _read_answer(sock: socket.socket, timeout: float) -> bytes:
    sock.settimeout(timeout)
    received = b""
    try:
        while chunk := sock.recv(65_536):
            received += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return received


def _send_until_answered(sock: socket.socket, head: bytes, total: int) -> bytes:
    """Send ``head`` then filler up to ``total`` bytes, stopping when the server answers."""
    sock.sendall(head)
    sent = len(head)
    filler = b"a" * _CHUNK
    while sent < total:
        readable, _, _ = select.select([sock], [], [], 0)
        if readable:
            break  # the server answered (or closed): no point going on
        try:
            sock.sendall(filler)
        except (BrokenPipeError, ConnectionResetError):
            break
        sent += len(filler)
    return _read_answer(sock, timeout=10.0)


def oversized_head(port: int, *, megabytes: int = 96) -> int | None:
    """A GET whose one header is ``megabytes`` long, without a token; the status answered."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        head = b"GET /healthz HTTP/1.1\r\nHost: hostile\r\nX-Big: "
        return _status_of(_send_until_answered(sock, head, megabytes * 2**20))


def oversized_body(
    port: int, path: str, headers: Mapping[str, str], *, megabytes: int = 96
) -> int | None:
    """A POST announcing (and sending) a ``megabytes`` body; the status answered."""
    size = megabytes * 2**20
    lines = [f"POST {path} HTTP/1.1", "Host: hostile", f"Content-Length: {size}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    head = ("\r\n".join(lines) + "\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        return _status_of(_send_until_answered(sock, head, len(head) + size))


@contextmanager
def slow_head(port: int, *, connections: int, interval: float = 0.1) -> Iterator[list[int | None]]:
    """``connections`` slowloris clients, each sending a header line every ``interval``.

    They dribble (on a thread) while the block runs and until the server answers each; on
    exit each one's status (the server's answer to it) is in the yielded list.
    """
    socks = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(connections)]
    statuses: list[int | None] = []
    try:
        for sock in socks:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: hostile\r\n")
        dribbling = threading.Thread(target=_dribble, args=(socks, interval), daemon=True)
        dribbling.start()
        yield statuses
        dribbling.join(timeout=60.0)
        statuses.extend(_status_of(_read_answer(sock, timeout=1.0)) for sock in socks)
    finally:
        for sock in socks:
            sock.close()


def _dribble(socks: list[socket.socket], interval: float) -> None:
    """One more header line on every socket per ``interval``, until each was answered."""
    deadline = time.monotonic() + 60.0
    pending = list(socks)
    while pending and time.monotonic() < deadline:
        readable, _, _ = select.select(pending, [], [], interval)
        pending = [sock for sock in pending if sock not in readable]
        for sock in list(pending):
            try:
                sock.sendall(b"X-Slow: 1\r\n")
            except OSError:
                pending.remove(sock)


def probe_health(port: int, *, probes: int, pause: float = 0.02) -> list[float]:
    """Seconds each of ``probes`` GET /healthz took, connection included; each must be 200.

    A raw socket per probe (a new connection, as a load balancer's probe): the figure is
    the server's, not an HTTP library's.
    """
    request = b"GET " + HEALTH_PROBE.encode() + b" HTTP/1.1\r\nHost: probe\r\n"
    request += b"Connection: close\r\n\r\n"
    took: list[float] = []
    for _ in range(probes):
        started = time.perf_counter()
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(request)
            answer = _read_answer(sock, timeout=10.0)
        took.append(time.perf_counter() - started)
        assert _status_of(answer) == 200, answer[:200]
        time.sleep(pause)
    return took


def _attacker(
    kind: str, port: int, path: str, headers: dict[str, str], stop: Any, out: Any
) -> None:
    statuses: list[int | None] = []
    while not stop.is_set():
        if kind == "head":
            statuses.append(oversized_head(port))
        else:
            statuses.append(oversized_body(port, path, headers))
        if len(statuses) == 1:
            out.put("ready")
    out.put(statuses)


@contextmanager
def attacking(
    kind: str,
    port: int,
    *,
    path: str = "/",
    headers: Mapping[str, str] | None = None,
    processes: int = 4,
) -> Iterator[list[int | None]]:
    """``processes`` attackers sending ``kind`` (``head`` or ``body``) again and again.

    The block starts once each attacker has been answered once; on exit every status
    answered during the block is in the yielded list.
    """
    context = multiprocessing.get_context("spawn")
    stop, out = context.Event(), context.Queue()
    workers = [
        context.Process(
            target=_attacker,
            args=(kind, port, path, dict(headers or {}), stop, out),
            daemon=True,
        )
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    statuses: list[int | None] = []
    try:
        for _ in workers:
            assert out.get(timeout=60) == "ready"
        yield statuses
    finally:
        stop.set()
        for _ in workers:
            statuses.extend(out.get(timeout=60))
        for worker in workers:
            worker.join(timeout=30)
