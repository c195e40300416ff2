"""The phase machines of GridweaveJob and GridweaveEndpoint, as data (pure: no I/O).

Every transport and every service uses these tables; nothing else decides whether a phase
may change. Repeating the current phase is not a move: the setters treat it as a no-op.

GridweaveJob::

    Pending -> Allocated -> Running -> Completed | Failed | Cancelled | TimedOut
    Pending, Allocated -> Failed | Cancelled
    Allocated, Running -> Pending          (requeue after a lost node or executor)
    Completed, Failed, Cancelled, TimedOut  terminal: never change

GridweaveEndpoint::

    Pending -> Deploying -> Running -> Stopped | Failed
    Running, Stopped, Failed -> Deploying  (redeploy)
    Pending, Deploying -> Stopped | Failed  (stopped before it ran; bad spec or image)
    Deploying, Running -> Pending           (placed again: its node was lost)
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from gridweave_controller.errors import InvalidTransition

__all__ = [
    "ENDPOINT_MOVES",
    "JOB_MOVES",
    "JOB_TERMINAL_PHASES",
    "EndpointPhase",
    "EndpointStopReason",
    "JobPhase",
    "check_endpoint_move",
    "check_job_move",
    "endpoint_is_replaceable",
]


class JobPhase(StrEnum):
    """The phase of a GridweaveJob (``status.phase``; a missing status reads as Pending)."""

    PENDING = "Pending"
    ALLOCATED = "Allocated"
    RUNNING = "Running"
    COMPLETED = "Completed"
    FAILED = "Failed"
    CANCELLED = "Cancelled"
    TIMED_OUT = "TimedOut"


class EndpointPhase(StrEnum):
    """The phase of a GridweaveEndpoint (``status.phase``; a missing status reads as Pending)."""

    PENDING = "Pending"
    DEPLOYING = "Deploying"
    RUNNING = "Running"
    STOPPED = "Stopped"
    FAILED = "Failed"


class EndpointStopReason(StrEnum):
    """The reasons a GridweaveEndpoint is Stopped with (``status.reason``), written once here.

    Only ``IDLE`` (scaled to zero) is woken by a call; a deploy of the endpoint's name
    replaces one stopped for any other reason (or Failed).
    """

    IDLE = "Idle"
    OUT_OF_CREDITS = "OutOfCredits"
    #: the owner's next billing period would pass one of their spending caps
    SPENDING_LIMIT = "SpendingLimit"
    DELETED = "Deleted"


def endpoint_is_replaceable(phase: EndpointPhase, reason: str | None) -> bool:
    """Whether a deploy of the endpoint's name replaces it: Failed, or Stopped for any reason
    but ``Idle`` (a scaled-to-zero endpoint is still in service: the next call wakes it)."""
    if phase is EndpointPhase.FAILED:
        return True
    return phase is EndpointPhase.STOPPED and reason != EndpointStopReason.IDLE


_J = JobPhase
#: Allowed job moves: phase -> the phases it may move to. Terminal phases map to nothing.
JOB_MOVES: Mapping[JobPhase, frozenset[JobPhase]] = {
    _J.PENDING: frozenset({_J.ALLOCATED, _J.FAILED, _J.CANCELLED}),
    _J.ALLOCATED: frozenset({_J.RUNNING, _J.FAILED, _J.CANCELLED, _J.PENDING}),
    _J.RUNNING: frozenset({_J.COMPLETED, _J.FAILED, _J.CANCELLED, _J.TIMED_OUT, _J.PENDING}),
    _J.COMPLETED: frozenset(),
    _J.FAILED: frozenset(),
    _J.CANCELLED: frozenset(),
    _J.TIMED_OUT: frozenset(),
}

JOB_TERMINAL_PHASES: frozenset[JobPhase] = frozenset(p for p, to in JOB_MOVES.items() if not to)

_E = EndpointPhase
#: Allowed endpoint moves: phase -> the phases it may move to.
ENDPOINT_MOVES: Mapping[EndpointPhase, frozenset[EndpointPhase]] = {
    _E.PENDING: frozenset({_E.DEPLOYING, _E.STOPPED, _E.FAILED}),
    _E.DEPLOYING: frozenset({_E.RUNNING, _E.STOPPED, _E.FAILED, _E.PENDING}),
    _E.RUNNING: frozenset({_E.STOPPED, _E.FAILED, _E.DEPLOYING, _E.PENDING}),
    _E.STOPPED: frozenset({_E.DEPLOYING}),
    _E.FAILED: frozenset({_E.DEPLOYING}),
}


def check_job_move(name: str, current: JobPhase, target: JobPhase) -> bool:
    """True when the move writes, False when it repeats the current phase; else raise.

    Raises:
        InvalidTransition: the job phase machine does not allow ``current -> target``.
    """
    if current == target:
        return False
    if target not in JOB_MOVES[current]:
        raise InvalidTransition("GridweaveJob", name, current.value, target.value)
    return True


def check_endpoint_move(name: str, current: EndpointPhase, target: EndpointPhase) -> bool:
    """True when the move writes, False when it repeats the current phase; else raise.

    Raises:
        InvalidTransition: the endpoint phase machine does not allow ``current -> target``.
    """
    if current == target:
        return False
    if target not in ENDPOINT_MOVES[current]:
        raise InvalidTransition("GridweaveEndpoint", name, current.value, target.value)
    return True
