"""One attempt the executor follows: the job as last seen, its worker, and where it stands."""

from __future__ import annotations

from dataclasses import dataclass, field

from gridweave_controller import Job
from gridweave_controller.operations import DEFAULT_TIMEOUT_SECONDS
from job_gateway.execution.actors import RunningAttempt

__all__ = ["Attempt", "started_timestamp"]


@dataclass(eq=False)
class Attempt:
    """One followed attempt of a job; ``busy`` while a step runs."""

    job: Job
    launch: bool  # Allocated when first seen: launch (or find) the actor
    run: RunningAttempt | None = None
    needs_running: bool = False
    started_at: float | None = None
    busy: bool = False
    dropped: bool = False
    adopted: bool = False
    ready_at: float | None = field(default=None)
    node_lost: str | None = None  # why its node is lost: requeue it (NodeLost)
    kept_warm: bool = False  # its worker went back to the warm pool: never kill it here

    @property
    def name(self) -> str:
        return self.job.name

    @property
    def attempt(self) -> int:
        return self.job.status.attempts

    @property
    def timeout_s(self) -> int:
        return self.job.spec.timeout_seconds or DEFAULT_TIMEOUT_SECONDS


def started_timestamp(job: Job) -> float | None:
    """The job's ``startedAt`` as Unix time, if it started."""
    started = job.status.started_at
    return None if started is None else started.timestamp()
