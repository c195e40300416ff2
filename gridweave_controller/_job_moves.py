"""The status each job setter writes (pure: no I/O). None means the move repeats: no write."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from gridweave_controller.conditions import (
    JOB_USAGE_REPORTED,
    ConditionStatus,
    format_precise_timestamp,
)
from gridweave_controller.errors import Conflict, Invalid
from gridweave_controller.phases import JOB_TERMINAL_PHASES, JobPhase, check_job_move
from gridweave_controller.validation import check_wall_seconds

from ._status_change import (
    ConditionUpdate,
    StatusChange,
    check_same_repeat,
    earlier_seconds,
    wall_time_fields,
)

ALLOCATED, RUNNING, FINISHED = "Allocated", "Running", "Finished"
KIND = "GridweaveJob"
_TRUE, _FALSE = ConditionStatus.TRUE, ConditionStatus.FALSE


def current_phase(status: Mapping[str, Any]) -> JobPhase:
    """The phase of a raw status; a missing status or phase is Pending."""
    return JobPhase(status.get("phase") or JobPhase.PENDING)


def _moves(name: str, status: Mapping[str, Any], target: JobPhase) -> bool:
    return check_job_move(name, current_phase(status), target)


def allocated(
    name: str,
    status: Mapping[str, Any],
    *,
    node: str,
    gpu_indices: list[int],
    gpu_count: int,
    now: datetime,
) -> StatusChange | None:
    """Pending -> Allocated on ``node`` with ``gpu_indices``: one index per GPU of the spec."""
    indices = list(gpu_indices)
    if len(indices) != gpu_count:
        raise Invalid(
            f"{KIND} {name!r} asks for {gpu_count} GPU(s) (spec.gpuCount), "
            f"not the {len(indices)} of gpu_indices {indices}",
            field="gpu_indices",
        )
    if not _moves(name, status, JobPhase.ALLOCATED):
        check_same_repeat(KIND, name, status, {"node": node, "gpuIndices": indices})
        return None
    message = f"node {node}, GPUs {indices}"
    return StatusChange(
        fields={
            "phase": JobPhase.ALLOCATED.value,
            "node": node,
            "gpuIndices": indices,
            "allocatedAt": format_precise_timestamp(now),
            "reason": None,
            "message": None,
        },
        conditions=(ConditionUpdate(ALLOCATED, _TRUE, "NodeAllocated", message),),
    )


def running(name: str, status: Mapping[str, Any], *, now: datetime) -> StatusChange | None:
    """Allocated -> Running."""
    if not _moves(name, status, JobPhase.RUNNING):
        return None
    return StatusChange(
        fields={"phase": JobPhase.RUNNING.value, "startedAt": format_precise_timestamp(now)},
        conditions=(ConditionUpdate(RUNNING, _TRUE, "Started", f"on node {status.get('node')}"),),
    )


def _finished(
    phase: JobPhase, reason: str, message: str, extra: Mapping[str, Any], now: datetime
) -> StatusChange:
    return StatusChange(
        fields={
            "phase": phase.value,
            "finishedAt": format_precise_timestamp(now),
            "reason": reason,
            "message": message or None,
            **extra,
        },
        conditions=(
            ConditionUpdate(RUNNING, _FALSE, reason, message, only_if_present=True),
            ConditionUpdate(FINISHED, _TRUE, reason, message),
        ),
    )


def completed(
    name: str,
    status: Mapping[str, Any],
    *,
    wall_seconds: float,
    result_ref: str | None,
    now: datetime,
    result_sha256: str | None = None,
) -> StatusChange | None:
    """Running -> Completed; bills ``ceil(wall_seconds)``."""
    extra = wall_time_fields(wall_seconds, earlier_seconds(status))
    if result_ref is not None:
        extra["resultRef"] = result_ref
    if result_sha256 is not None:
        extra["resultSha256"] = result_sha256
    if not _moves(name, status, JobPhase.COMPLETED):
        check_same_repeat(KIND, name, status, extra)
        return None
    return _finished(JobPhase.COMPLETED, "Completed", "", extra, now)


def failed(
    name: str,
    status: Mapping[str, Any],
    *,
    reason: str,
    message: str,
    wall_seconds: float | None,
    now: datetime,
) -> StatusChange | None:
    """Pending, Allocated or Running -> Failed with a CamelCase ``reason``."""
    extra = wall_time_fields(wall_seconds, earlier_seconds(status))
    if not _moves(name, status, JobPhase.FAILED):
        check_same_repeat(KIND, name, status, extra)
        return None
    return _finished(JobPhase.FAILED, reason, message, extra, now)


def cancelled(
    name: str, status: Mapping[str, Any], *, message: str, wall_seconds: float | None, now: datetime
) -> StatusChange | None:
    """Pending, Allocated or Running -> Cancelled."""
    extra = wall_time_fields(wall_seconds, earlier_seconds(status))
    if not _moves(name, status, JobPhase.CANCELLED):
        check_same_repeat(KIND, name, status, extra)
        return None
    return _finished(JobPhase.CANCELLED, "Cancelled", message, extra, now)


def timed_out(
    name: str, status: Mapping[str, Any], *, message: str, wall_seconds: float | None, now: datetime
) -> StatusChange | None:
    """Running -> TimedOut."""
    extra = wall_time_fields(wall_seconds, earlier_seconds(status))
    if not _moves(name, status, JobPhase.TIMED_OUT):
        check_same_repeat(KIND, name, status, extra)
        return None
    return _finished(JobPhase.TIMED_OUT, "TimedOut", message, extra, now)


def pending(
    name: str,
    status: Mapping[str, Any],
    *,
    reason: str,
    message: str,
    now: datetime,
    wall_seconds: float | None = None,
) -> StatusChange | None:
    """Allocated or Running -> Pending (requeue): frees node and GPUs, ``attempts`` + 1; the
    lost attempt's running time (``wall_seconds``) is added to ``earlierSeconds``, so the
    job is billed for it when it ends, and its node and GPUs are kept (``earlierNode``,
    ``earlierGpuIndices``) for a job that ends before it is placed again."""
    if not _moves(name, status, JobPhase.PENDING):
        return None
    lost = check_wall_seconds(wall_seconds) or 0.0
    ran = status.get("node") if lost else None
    return StatusChange(
        fields={
            "phase": JobPhase.PENDING.value,
            "earlierSeconds": round(earlier_seconds(status) + lost, 3) or None,
            "earlierNode": ran or status.get("earlierNode"),
            "earlierGpuIndices": status.get("gpuIndices")
            if ran
            else status.get("earlierGpuIndices"),
            "attempts": int(status.get("attempts") or 0) + 1,
            "node": None,
            "gpuIndices": None,
            "allocatedAt": None,
            "startedAt": None,
            "reason": reason,
            "message": message or None,
        },
        conditions=(
            ConditionUpdate(ALLOCATED, _FALSE, reason, message),
            ConditionUpdate(RUNNING, _FALSE, reason, message, only_if_present=True),
        ),
    )


#: The UsageReported condition's reasons: a usage record settled the hold, or the job never
#: held a GPU and its hold was released with nothing billed.
REPORTED, HOLD_RELEASED = "Reported", "HoldReleased"


def usage_reported(name: str, status: Mapping[str, Any], *, usage_id: int) -> StatusChange | None:
    """Mark a terminal job's usage as recorded by metering (record ``usage_id``).

    Not a phase move: the phase stays, so a terminal job still refuses every move. Only a
    terminal job has usage to report (Conflict otherwise); the same mark again writes
    nothing, a mark naming another record (or a released hold) is a Conflict (one job, one
    usage record).
    """
    return _usage_mark(name, status, reason=REPORTED, message=str(usage_id))


def hold_released(name: str, status: Mapping[str, Any]) -> StatusChange | None:
    """Mark a terminal job that never held a GPU as settled with nothing billed: its hold
    was released. The same condition as :func:`usage_reported` (one mark per job), reason
    ``HoldReleased``; a job that held a GPU is a Conflict (its usage is billed instead)."""
    if status.get("node") or earlier_seconds(status):
        raise Conflict(f"{KIND} {name!r} held a GPU: its usage is billed, not released")
    return _usage_mark(name, status, reason=HOLD_RELEASED, message="")


def _usage_mark(
    name: str, status: Mapping[str, Any], *, reason: str, message: str
) -> StatusChange | None:
    phase = current_phase(status)
    if phase not in JOB_TERMINAL_PHASES:
        raise Conflict(
            f"{KIND} {name!r} is {phase.value}: its usage is reported once it has finished"
        )
    marked = next(
        (c for c in status.get("conditions") or [] if c.get("type") == JOB_USAGE_REPORTED), None
    )
    if marked is not None and marked.get("status") == _TRUE.value:
        if (marked.get("reason"), marked.get("message") or "") != (reason, message):
            raise Conflict(
                f"{KIND} {name!r} was {_described(marked)}, not {_described_as(reason, message)}"
            )
        return None
    return StatusChange(
        fields={}, conditions=(ConditionUpdate(JOB_USAGE_REPORTED, _TRUE, reason, message),)
    )


def _described(marked: Mapping[str, Any]) -> str:
    return _described_as(str(marked.get("reason")), str(marked.get("message") or ""))


def _described_as(reason: str, message: str) -> str:
    if reason == HOLD_RELEASED:
        return "settled with its hold released"
    return f"reported as usage record {message}"
