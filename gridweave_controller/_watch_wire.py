"""The watch wire format: newline-delimited JSON events, as the apiserver streams them.

Each line is ``{"type": ..., "object": ...}``; an ``ERROR`` event carries a Status and is
raised here as the error it names (:class:`~gridweave_controller.errors.Expired` for a
410), so every transport that reads the format (the official client's streams, the proxied
client) turns the same line into the same event or error.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from gridweave_controller.errors import CrdError, TransportError, error_from_status

__all__ = [
    "EVENT_TYPES",
    "LineSplitter",
    "decode_event",
    "encode_event",
    "error_event",
    "read_timeout",
    "status_of",
]

#: The event types a watch delivers (``ERROR`` is raised, never delivered).
EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK"})
#: How long past the server's own timeout a silent stream is given before it counts as dead.
_READ_GRACE_S = 30
#: Without a timeout the apiserver closes a watch within an hour (``--min-request-timeout``
#: doubled at most); the client gives up on a silent stream a little after that.
_DEFAULT_READ_TIMEOUT_S = 2 * 3600


def read_timeout(timeout_seconds: int | None) -> float:
    """The client-side read timeout of a watch the server closes after ``timeout_seconds``."""
    if timeout_seconds is None:
        return float(_DEFAULT_READ_TIMEOUT_S)
    return float(timeout_seconds + _READ_GRACE_S)


def decode_event(line: bytes | str) -> dict[str, Any]:
    """One line of a watch stream as an event; an ERROR event raised as its error."""
    try:
        event = json.loads(line)
    except ValueError as exc:
        raise TransportError(f"a watch stream sent a line that is not JSON: {exc}") from exc
    if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
        raise TransportError("a watch stream sent an event without an object")
    kind = event.get("type")
    if kind == "ERROR":
        status = event["object"]
        code = status.get("code")
        raise error_from_status(status, code if isinstance(code, int) else None)
    if kind not in EVENT_TYPES:
        raise TransportError(f"a watch stream sent an event of unknown type {kind!r}")
    return event


def encode_event(event: Mapping[str, Any]) -> bytes:
    """An event as one line of the wire format."""
    return json.dumps(event, separators=(",", ":")).encode() + b"\n"


def status_of(error: CrdError, code: int | None = None) -> dict[str, Any]:
    """The error's Status with its HTTP code set (``code`` overrides the error's own)."""
    status = error.to_status()
    status["code"] = code if code is not None else status.get("code") or error.code
    return status


def error_event(error: CrdError, code: int | None = None) -> dict[str, Any]:
    """The ``ERROR`` event the apiserver ends a watch with, for ``error``."""
    return {"type": "ERROR", "object": status_of(error, code)}


class LineSplitter:
    """Bytes as they arrive, cut into complete lines (the last partial one is kept)."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        """The complete, non-empty lines ``chunk`` finishes."""
        data = self._pending + chunk if self._pending else chunk
        lines = data.split(b"\n")
        self._pending = lines.pop()
        return [line for line in lines if line and not line.isspace()]

    def lines(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        """Every complete line of ``chunks``."""
        for chunk in chunks:
            yield from self.feed(chunk)
