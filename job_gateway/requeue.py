"""A lost attempt goes back to Pending while retries remain, else Failed: the one retry rule.

The executor (a worker that died, one that never started, one found gone after a restart)
and the node-loss watch (a node gone or NotReady) both end a lost attempt through
:func:`requeue_or_fail`.
"""

from __future__ import annotations

from gridweave_controller.models import Job
from gridweave_controller.operations import DEFAULT_MAX_RETRIES, AsyncClientBase

__all__ = ["lost_seconds", "max_retries", "requeue_or_fail"]


def max_retries(job: Job) -> int:
    """How many times ``job`` may be requeued (``spec.maxRetries``, else the default)."""
    retries = job.spec.max_retries
    return DEFAULT_MAX_RETRIES if retries is None else retries


async def requeue_or_fail(
    crd: AsyncClientBase,
    job: Job,
    reason: str,
    message: str,
    *,
    wall_seconds: float | None = None,
) -> Job:
    """Pending (``attempts`` + 1) while ``attempts`` < max retries, else Failed; both
    ``reason``. ``wall_seconds``: how long the lost attempt ran, billed either way (with the
    job's last attempt, or as its last)."""
    retries = max_retries(job)
    if job.status.attempts < retries:
        return await crd.set_job_pending(
            job.name, reason, f"{message}; requeued", wall_seconds=wall_seconds
        )
    return await crd.set_job_failed(
        job.name, reason, f"{message}; no retries left ({retries})", wall_seconds=wall_seconds
    )


def lost_seconds(job: Job, now: float) -> float | None:
    """How long the job's current attempt has run, by its ``startedAt`` (None: it never
    started running)."""
    started = job.status.started_at
    return None if started is None else max(0.0, now - started.timestamp())
