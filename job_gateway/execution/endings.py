"""How an attempt's end reaches the job: its outcome read back, its status written, the
seconds it ran.

The executor decides when an attempt has ended (:mod:`job_gateway.execution.executor`);
this module reads the worker's JSON outcome record (never a pickle) and turns it into the
GridweaveJob's terminal transition, billed by the gateway's clock
(:func:`~job_gateway.execution.outcome.billed_wall_seconds`).
"""

from __future__ import annotations

import logging

from gridweave_controller.models import Job
from gridweave_controller.operations import AsyncClientBase
from gridweave_runtime.storage import ObjectNotFound, ObjectStore, attempt_objects
from job_gateway.execution.attempts import Attempt
from job_gateway.execution.outcome import (
    Outcome,
    billed_wall_seconds,
    outcome_key,
    parse_outcome,
)
from job_gateway.requeue import lost_seconds

__all__ = ["ran_seconds", "read_outcome", "record_outcome"]

_log = logging.getLogger(__name__)


def read_outcome(store: ObjectStore, job_id: str, attempt: int) -> Outcome | None:
    """The attempt's outcome record; None when there is none (or none that parses)."""
    uri = store.uri(outcome_key(job_id, attempt))
    try:
        data = store.get(uri)
    except ObjectNotFound:
        return None
    try:
        return parse_outcome(data)
    except ValueError:
        _log.warning("job %s: unreadable outcome at %s", job_id, uri)
        return None


async def record_outcome(
    crd: AsyncClientBase, store: ObjectStore, attempt: Attempt, outcome: Outcome, observed: float
) -> Job:
    """Complete or fail the job as its outcome says, billed from its start to ``observed``
    (when the gateway saw the run end); the job as written."""
    assert attempt.started_at is not None
    wall = billed_wall_seconds(
        outcome, started_at=attempt.started_at, observed=observed, adopted=attempt.adopted
    )
    if outcome.status == "ok":
        result = store.uri(attempt_objects(attempt.name, attempt.attempt).result)
        return await crd.set_job_completed(
            attempt.name,
            wall,
            result_ref=result,
            result_sha256=outcome.result_sha256,
            known=attempt.job,
        )
    message = outcome.message or outcome.exception_type or "the function raised"
    reason = outcome.reason or "Exception"
    return await crd.set_job_failed(
        attempt.name, reason, message, wall_seconds=wall, known=attempt.job
    )


def ran_seconds(attempt: Attempt, now: float) -> float | None:
    """The seconds a lost attempt ran: every second is billed, whatever ended it, from its
    start as this executor saw it (else as the job's status has it, None: unknown) to ``now``."""
    if attempt.started_at is not None:
        return max(0.0, now - attempt.started_at)
    return lost_seconds(attempt.job, now)
