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

__all__ = ["FinishWaiters", "Waiter"]


class Waiter:
    """One waiting caller: ``done`` is set once its job finished (``job``, the informer's
    terminal copy) or was deleted (``job`` None: read it again)."""

    def __init__(self) -> None:
        self.done = asyncio.Event()
        self.job: Job | None = None


class FinishWaiters:
    """The callers waiting for each job, woken by the informer; owned by the gateway's loop."""

    def __init__(self) -> None:
        self._waiting: defaultdict[str, set[Waiter]] = defaultdict(set)

    @contextmanager
    def waiting(self, job_id: str) -> Iterator[Waiter]:
        """A waiter woken once ``job_id`` finishes; register it before reading the job, so a
        finish between the read and the wait is not missed."""
        waiter = Waiter()
        self._waiting[job_id].add(waiter)
        try:
            yield waiter
        finally:
            waiters = self._waiting.get(job_id)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._waiting[job_id]

    def job_changed(self, job: Job) -> None:
        """The informer's added or updated job: wake its waiters once it has finished."""
        if job.phase in JOB_TERMINAL_PHASES:
            self._wake(job.name, job)

    def job_deleted(self, job: Job) -> None:
        """A deleted job: its waiters read it again (and answer 404)."""
        self._wake(job.name, None)

    def _wake(self, job_id: str, job: Job | None) -> None:
        for waiter in self._waiting.get(job_id, ()):
            waiter.job = job
            waiter.done.set()
