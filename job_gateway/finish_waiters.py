"""Callers waiting for jobs to finish, woken by the job informer (the long poll of
``GET /v1/jobs/{id}?wait=``): a waiting request costs no call to the API server until the
informer sees the job in a terminal phase (or it is deleted), or the wait runs out.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

from gridweave_controller import Job
from gridweave_controller.phases import JOB_TERMINAL_PHASES

__all__ = ["FinishWaiters"]


class FinishWaiters:
    """One event per waiting caller, set when its job finishes; owned by the gateway's loop."""

    def __init__(self) -> None:
        self._waiting: defaultdict[str, set[asyncio.Event]] = defaultdict(set)

    @contextmanager
    def waiting(self, job_id: str) -> Iterator[asyncio.Event]:
        """An event set once ``job_id`` finishes; register it before reading the job, so a
        finish between the read and the wait is not missed."""
        event = asyncio.Event()
        self._waiting[job_id].add(event)
        try:
            yield event
        finally:
            events = self._waiting.get(job_id)
            if events is not None:
                events.discard(event)
                if not events:
                    del self._waiting[job_id]

    def job_changed(self, job: Job) -> None:
        """The informer's added or updated job: wake its waiters once it has finished."""
        if job.phase in JOB_TERMINAL_PHASES:
            self._wake(job.name)

    def job_deleted(self, job: Job) -> None:
        """A deleted job: its waiters read it again (and answer 404)."""
        self._wake(job.name)

    def _wake(self, job_id: str) -> None:
        for event in self._waiting.get(job_id, ()):
            event.set()

    def __len__(self) -> int:
        return sum(len(events) for events in self._waiting.values())
