"""A loop that keeps something outside the database equal to the node registry.

Each pass compares what is (WireGuard peers, RayCluster worker groups) with what the
registry calls for and applies the difference. Passes run after start, whenever a change is
requested (a node joined or left), and every ``period_seconds`` besides, in a thread of its
own: a failed pass is logged and the next one converges, so a restart or a lost command
leaves nothing behind.
"""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod

__all__ = ["Reconciler"]

_logger = logging.getLogger("gridweave.reconciler")


class Reconciler(ABC):
    """Run :meth:`sync_once` after start, on :meth:`request`, and every ``period_seconds``."""

    #: What the log calls it.
    name = "reconciler"

    def __init__(self, *, period_seconds: float = 60.0) -> None:
        self.period_seconds = period_seconds
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        #: Passes completed, failed ones included (a test waits for one after a change).
        self.passes = 0
        self._passed = threading.Condition()

    @abstractmethod
    def sync_once(self) -> tuple[int, int]:
        """One pass: (things set, things removed)."""

    def request(self) -> None:
        """Run a pass soon."""
        self._wake.set()

    def wait_for_pass(self, after: int, timeout: float) -> bool:
        """Whether more than ``after`` passes completed within ``timeout`` seconds."""
        with self._passed:
            return self._passed.wait_for(lambda: self.passes > after, timeout)

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.clear()
            try:
                changed = self.sync_once()
                if any(changed):
                    _logger.info("%s: %d set, %d removed", self.name, *changed)
            except Exception:  # logged; the next pass converges
                _logger.warning("%s: pass failed", self.name, exc_info=True)
            with self._passed:
                self.passes += 1
                self._passed.notify_all()
            self._wake.wait(self.period_seconds)

    def start(self) -> None:
        """Run passes in a thread of its own until :meth:`stop`."""
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread (after the pass under way)."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
            self._thread = None
