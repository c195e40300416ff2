"""A lost attempt goes back to Pending while retries remain, else Failed: the one retry rule.

The executor (a worker that died, one that never started, one found gone after a restart)
and the node-loss watch (a node gone or NotReady) both end a lost attempt through
:func:`requeue_or_fail`.
"""

from __future__ import annotations

from gridweave_controller.models import Job
from gridweave_controller.operations import DEFAULT_MAX_RETRIES, AsyncClientBase

__all__ = ["max_retries", "requeue_or_fail"]


def max_retries(job: Job) -> int:
    """How many times ``job`` may be requeued (``spec.maxRetries``, else the default)."""
    retries = job.spec.max_retries
    return DEFAULT_MAX_RETRIES if retries is None else retries


async def requeue_or_fail(crd: AsyncClientBase, job: Job, reason: str, message: str) -> Job:
    """Pending (``attempts`` + 1) while ``attempts`` < max retries, else Failed; both ``reason``."""
    retries = max_retries(job)
    if job.status.attempts < retries:
        return await crd.set_job_pending(job.name, reason, f"{message}; requeued")
    return await crd.set_job_failed(job.name, reason, f"{message}; no retries left ({retries})")
