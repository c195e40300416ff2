"""A job's outputs while it runs: captured to files, mirrored to the object store in parts.

The container writes its stdout and stderr to two temporary files of the worker
(:func:`capture_file`); :class:`LiveOutput` appends what each gained to the object store
every :data:`LIVE_OUTPUT_SECONDS` as a part (:mod:`gridweave_runtime.storage.logs`), so the
platform's live log can follow it; the worker writes the whole outputs once at the end.
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from gridweave_runtime.storage import log_part_key

__all__ = ["LIVE_OUTPUT_SECONDS", "Captured", "LiveOutput", "capture_file"]


#: While a job runs, what it printed since the last upload is appended to the object store
#: this often (a part, :mod:`gridweave_runtime.storage.logs`), so the platform's live log
#: (server-sent events) can follow it; the whole output is written once at the end.
LIVE_OUTPUT_SECONDS = 0.5


class Captured:
    """What a file descriptor received while captured (``data`` once the capture ended)."""

    data: bytes = b""
    fileno: int = -1  # the capture file while capturing

    def since(self, offset: int) -> bytes:
        """What was written after ``offset`` until now (a positional read: the writers'
        offset stays)."""
        try:
            return os.pread(self.fileno, max(0, os.fstat(self.fileno).st_size - offset), offset)
        except OSError:
            return b""


class LiveOutput:
    """A thread appending what each capture gained to its object's parts while it grows."""

    def __init__(self, store: Any, targets: list[tuple[str, Captured]]) -> None:
        self._store = store
        self._targets = targets
        self._parts: list[str] = []
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gw-live-output", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        written = dict.fromkeys((key for key, _ in self._targets), 0)
        while not self._stopped.wait(LIVE_OUTPUT_SECONDS):
            for key, captured in self._targets:
                new = captured.since(written[key])
                if not new:
                    continue
                part = log_part_key(key, written[key], written[key] + len(new))
                self._parts.append(part)  # deleted at the end even if its upload seemed to fail
                try:
                    self._store.put(part, new)
                except Exception:  # sent again, with what follows, at the next tick
                    continue
                written[key] += len(new)

    def stop(self) -> None:
        """Stop and wait for the thread (the final, whole outputs are the caller's)."""
        self._stopped.set()
        self._thread.join()

    def delete_parts(self) -> None:
        """Delete the parts uploaded (after the whole outputs were written)."""
        for part in self._parts:
            try:
                self._store.delete(part)
            except Exception:  # readers take the whole object first: a leftover part is unread
                continue


@contextmanager
def capture_file() -> Iterator[Captured]:
    """A temporary file the container writes one of its outputs to (``data`` at the end)."""
    captured = Captured()
    with tempfile.TemporaryFile() as handle:
        captured.fileno = handle.fileno()
        try:
            yield captured
        finally:
            handle.seek(0)
            captured.data = handle.read()
