"""The status each endpoint setter writes (pure: no I/O). None means no write."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from gridweave_controller.billing import billed_seconds
from gridweave_controller.conditions import (
    ConditionStatus,
    format_precise_timestamp,
)
from gridweave_controller.errors import Conflict, Invalid, InvalidTransition
from gridweave_controller.phases import EndpointPhase, check_endpoint_move

from ._status_change import (
    ConditionUpdate,
    StatusChange,
    check_same_repeat,
    parse_timestamp,
)

READY, HEALTHY = "Ready", "Healthy"
KIND = "GridweaveEndpoint"
#: The phases in which a deployment exists to be probed.
PROBED_PHASES = (EndpointPhase.DEPLOYING, EndpointPhase.RUNNING)
_TRUE, _FALSE, _UNKNOWN = ConditionStatus.TRUE, ConditionStatus.FALSE, ConditionStatus.UNKNOWN


def current_phase(status: Mapping[str, Any]) -> EndpointPhase:
    """The phase of a raw status; a missing status or phase is Pending."""
    return EndpointPhase(status.get("phase") or EndpointPhase.PENDING)


def _billed_run(phase: EndpointPhase, status: Mapping[str, Any], now: datetime) -> dict[str, int]:
    """Leaving Running (stop, failure or redeploy) adds the run's seconds to billedSeconds."""
    started = parse_timestamp(status.get("startedAt"))
    if phase is not EndpointPhase.RUNNING or started is None:
        return {}
    ran = max(0.0, (now - started).total_seconds())
    return {"billedSeconds": int(status.get("billedSeconds") or 0) + billed_seconds(ran)}


def deploying(
    name: str,
    status: Mapping[str, Any],
    *,
    node: str,
    gpu_indices: list[int],
    vendor: str | None,
    now: datetime,
    from_phase: EndpointPhase | None = None,
) -> StatusChange | None:
    """Pending, Running, Stopped or Failed (only ``from_phase`` when given) -> Deploying on
    ``node`` with ``gpu_indices``
    (of ``vendor``: the placed GPUs' maker, what billing prices an ``any`` endpoint at).

    A redeploy from Running first adds the finished run's seconds to ``billedSeconds``. The
    run it replaces leaves the status (``startedAt``, ``stoppedAt`` cleared): the gateway
    bills a run to its end before it writes the placement that replaces it.
    ``placedAt`` is now: a Serve application deployed before it belongs to an earlier
    placement (a restarted reconciler deletes it rather than adopt it).
    """
    indices = list(gpu_indices)
    phase = current_phase(status)
    if from_phase is not None and phase not in (from_phase, EndpointPhase.DEPLOYING):
        raise InvalidTransition(KIND, name, phase.value, EndpointPhase.DEPLOYING.value)
    if not check_endpoint_move(name, phase, EndpointPhase.DEPLOYING):
        check_same_repeat(KIND, name, status, {"node": node, "gpuIndices": indices})
        return None
    message = f"node {node}, GPUs {indices}"
    return StatusChange(
        fields={
            "phase": EndpointPhase.DEPLOYING.value,
            "node": node,
            "gpuIndices": indices,
            "vendor": vendor,
            "placedAt": format_precise_timestamp(now),
            "url": None,
            "readyReplicas": 0,
            "runReplicas": None,
            "health": "Unknown",
            "startedAt": None,
            "stoppedAt": None,
            "reason": None,
            "message": None,
            **_billed_run(phase, status, now),
        },
        conditions=(
            ConditionUpdate(READY, _FALSE, "Deploying", message),
            ConditionUpdate(HEALTHY, _UNKNOWN, "Deploying", ""),
        ),
    )


def running(
    name: str, status: Mapping[str, Any], *, url: str, now: datetime
) -> StatusChange | None:
    """Deploying -> Running at ``url``; billing time starts."""
    if not check_endpoint_move(name, current_phase(status), EndpointPhase.RUNNING):
        check_same_repeat(KIND, name, status, {"url": url})
        return None
    return StatusChange(
        fields={
            "phase": EndpointPhase.RUNNING.value,
            "url": url,
            "startedAt": format_precise_timestamp(now),
        },
        conditions=(ConditionUpdate(READY, _TRUE, "Running", f"serving at {url}"),),
    )


def _leaving(
    phase: EndpointPhase,
    status: Mapping[str, Any],
    target: EndpointPhase,
    *,
    reason: str,
    message: str,
    now: datetime,
    fields: Mapping[str, Any],
) -> StatusChange:
    """A move that ends the deployment (stopped, failed, back to placement): no ready
    replica, health unknown, the reason; a run that was Running adds its seconds to
    ``billedSeconds``. ``fields``: what the target writes besides."""
    return StatusChange(
        fields={
            **fields,
            "phase": target.value,
            "readyReplicas": 0,
            "health": "Unknown",
            "reason": reason,
            "message": message or None,
            **_billed_run(phase, status, now),
        },
        conditions=(
            ConditionUpdate(READY, _FALSE, reason, message),
            ConditionUpdate(HEALTHY, _UNKNOWN, reason, "", only_if_present=True),
        ),
    )


def _ended(
    name: str,
    status: Mapping[str, Any],
    target: EndpointPhase,
    reason: str,
    message: str,
    now: datetime,
) -> StatusChange | None:
    phase = current_phase(status)
    if not check_endpoint_move(name, phase, target):
        return None
    stopped_at = {"stoppedAt": format_precise_timestamp(now)}
    return _leaving(
        phase, status, target, reason=reason, message=message, now=now, fields=stopped_at
    )


def pending(
    name: str, status: Mapping[str, Any], *, reason: str, message: str, now: datetime
) -> StatusChange | None:
    """Deploying or Running -> Pending: placed again (its node was lost).

    Node, GPUs and URL are cleared (the VRAM is no longer held). A run that was Running
    ends here: ``stoppedAt`` is now and its seconds go to ``billedSeconds``, while
    ``startedAt`` and ``vendor`` stay, so billing settles that run to this stop at its own
    GPUs' price (before the next placement replaces it: the gap is never billed).
    """
    phase = current_phase(status)
    if not check_endpoint_move(name, phase, EndpointPhase.PENDING):
        return None
    ran = phase is EndpointPhase.RUNNING and status.get("startedAt") is not None
    unplaced = {
        "node": None,
        "gpuIndices": None,
        "url": None,
        "stoppedAt": format_precise_timestamp(now) if ran else None,
    }
    return _leaving(
        phase,
        status,
        EndpointPhase.PENDING,
        reason=reason,
        message=message,
        now=now,
        fields=unplaced,
    )


def stopped(
    name: str, status: Mapping[str, Any], *, reason: str, message: str, now: datetime
) -> StatusChange | None:
    """Pending, Deploying or Running -> Stopped; adds the running time to ``billedSeconds``."""
    return _ended(name, status, EndpointPhase.STOPPED, reason, message, now)


def failed(
    name: str, status: Mapping[str, Any], *, reason: str, message: str, now: datetime
) -> StatusChange | None:
    """Pending, Deploying or Running -> Failed; adds the running time to ``billedSeconds``."""
    return _ended(name, status, EndpointPhase.FAILED, reason, message, now)


def health(
    name: str,
    status: Mapping[str, Any],
    *,
    healthy: bool,
    message: str,
    ready_replicas: int | None,
) -> StatusChange | None:
    """Record a health probe while Deploying or Running: ``health``, ``readyReplicas``, ``Healthy``.

    A probe that arrives after the endpoint stopped or failed is a Conflict: it describes a
    deployment that is gone, and must not mark a stopped endpoint Healthy.
    """
    if ready_replicas is not None and (
        isinstance(ready_replicas, bool)
        or not isinstance(ready_replicas, int)
        or ready_replicas < 0
    ):
        raise Invalid("ready_replicas must be an integer >= 0", field="ready_replicas")
    phase = current_phase(status)
    if phase not in PROBED_PHASES:
        raise Conflict(
            f"{KIND} {name!r} is {phase.value}: a health probe applies only while "
            + " or ".join(p.value for p in PROBED_PHASES)
        )
    value = "Healthy" if healthy else "Unhealthy"
    fields: dict[str, Any] = {"health": value}
    if ready_replicas is not None:
        fields["readyReplicas"] = ready_replicas
        if ready_replicas > 0:  # the run's replicas, kept when it ends (billing's to settle)
            fields["runReplicas"] = ready_replicas
    condition = next((c for c in status.get("conditions") or [] if c.get("type") == HEALTHY), None)
    unchanged = (
        all(status.get(key) == wanted for key, wanted in fields.items())
        and condition is not None
        and condition.get("status") == ("True" if healthy else "False")
        and condition.get("message", "") == message
    )
    if unchanged:
        return None
    return StatusChange(
        fields=fields,
        conditions=(ConditionUpdate(HEALTHY, _TRUE if healthy else _FALSE, value, message),),
    )


def waiting(
    name: str, status: Mapping[str, Any], *, reason: str, message: str
) -> StatusChange | None:
    """Say why a Pending endpoint is not placed yet: ``reason``, ``message`` and ``Ready``
    False with them (the scheduler's word: a real GPU busy while only simulated ones have
    room). The placement that follows clears them. The same reason and message again write
    nothing; in any other phase it is a Conflict (its reason is its stop's or failure's).
    """
    phase = current_phase(status)
    if phase is not EndpointPhase.PENDING:
        raise Conflict(f"{KIND} {name!r} is {phase.value}: why it waits applies only while Pending")
    if status.get("reason") == reason and (status.get("message") or "") == message:
        return None
    return StatusChange(
        fields={"reason": reason, "message": message or None},
        conditions=(ConditionUpdate(READY, _FALSE, reason, message),),
    )
