"""Building a new status and the merge patch that writes it (pure: no I/O)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gridweave_controller.billing import billed_seconds
from gridweave_controller.conditions import ConditionStatus, set_condition
from gridweave_controller.errors import Conflict
from gridweave_controller.validation import check_wall_seconds


@dataclass(frozen=True)
class ConditionUpdate:
    """One condition to set; ``only_if_present`` leaves an absent condition absent."""

    type: str
    status: ConditionStatus
    reason: str
    message: str = ""
    only_if_present: bool = False


@dataclass(frozen=True)
class StatusChange:
    """What a move sets: status fields (None removes the field) and conditions."""

    fields: Mapping[str, Any]
    conditions: Sequence[ConditionUpdate] = field(default_factory=tuple)


def apply_change(
    status: Mapping[str, Any], change: StatusChange, *, generation: int, now: datetime
) -> dict[str, Any]:
    """The new status: ``status`` with the change applied; the input is not modified."""
    new = {key: value for key, value in status.items() if key != "conditions"}
    for key, value in change.fields.items():
        if value is None:
            new.pop(key, None)
        else:
            new[key] = value
    conditions: list[dict[str, Any]] = list(status.get("conditions") or [])
    present = {c.get("type") for c in conditions}
    for update in change.conditions:
        if update.only_if_present and update.type not in present:
            continue
        conditions = set_condition(
            conditions,
            type_=update.type,
            status=update.status,
            reason=update.reason,
            message=update.message,
            observed_generation=generation,
            now=now,
        )
    new["conditions"] = conditions
    new["observedGeneration"] = generation
    return new


def status_merge_patch(
    old: Mapping[str, Any], new: Mapping[str, Any], resource_version: str
) -> dict[str, Any]:
    """A JSON merge patch from ``old`` to ``new`` status, guarded by ``resource_version``.

    Changed fields are sent, removed ones as null; the conditions list is always sent
    whole, because a merge patch replaces lists.
    """
    status_patch: dict[str, Any] = {
        key: value for key, value in new.items() if old.get(key) != value
    }
    status_patch.update({key: None for key in old if key not in new})
    status_patch["conditions"] = new.get("conditions", [])
    return {"metadata": {"resourceVersion": resource_version}, "status": status_patch}


def wall_time_fields(wall_seconds: float | None, earlier_seconds: float = 0.0) -> dict[str, Any]:
    """``wallSeconds`` (the last attempt's) when known, and ``billedSeconds``: the last
    attempt's and the earlier, lost attempts' (``earlier_seconds``) running time together."""
    checked = check_wall_seconds(wall_seconds)
    if checked is None:
        return {"billedSeconds": billed_seconds(earlier_seconds)} if earlier_seconds else {}
    return {"wallSeconds": checked, "billedSeconds": billed_seconds(checked + earlier_seconds)}


def earlier_seconds(status: Mapping[str, Any]) -> float:
    """The running seconds of a job's earlier attempts, lost and requeued (``earlierSeconds``)."""
    value = status.get("earlierSeconds")
    return float(value) if isinstance(value, int | float) and value > 0 else 0.0


def check_same_repeat(
    kind: str, name: str, status: Mapping[str, Any], arguments: Mapping[str, Any]
) -> None:
    """A move that repeats the current phase is a no-op only with the same arguments.

    Two schedulers placing one job, or a retry racing a re-placement, must not both be told
    they succeeded: a repeat with other arguments raises Conflict naming what differs.
    """
    differing = [key for key, value in arguments.items() if status.get(key) != value]
    if differing:
        stored = ", ".join(f"{key}={status.get(key)!r}" for key in differing)
        asked = ", ".join(f"{key}={arguments[key]!r}" for key in differing)
        raise Conflict(
            f"{kind} {name!r} is already {status.get('phase')} with {stored}; not {asked}"
        )


def parse_timestamp(value: object) -> datetime | None:
    """Read an RFC 3339 timestamp from a raw status, or None."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


__all__ = [
    "ConditionUpdate",
    "StatusChange",
    "apply_change",
    "parse_timestamp",
    "status_merge_patch",
    "wall_time_fields",
]
