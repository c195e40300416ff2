"""Status conditions with Kubernetes ``metav1.Condition`` semantics (pure: no I/O).

A condition list is keyed on ``type`` (the CRDs declare it a list map). Setting a
condition keeps its ``lastTransitionTime`` unless ``status`` flips; ``reason`` must match
the Kubernetes pattern; timestamps are RFC 3339 UTC with a ``Z`` (whole seconds, as
``metav1.Time``; the phase timestamps of a status that bills, such as ``startedAt``, keep
microseconds, as ``metav1.MicroTime``, so billed time is not rounded twice); ``observedGeneration``
is the ``metadata.generation`` of the same read the new status was computed from.

Condition types written by Gridweave:

- GridweaveJob: ``Allocated`` (a node and GPUs are held), ``Running`` (the function runs),
  ``Finished`` (a terminal phase was reached; its reason is the terminal phase or the
  failure reason), ``UsageReported`` (metering holds the finished job's usage record;
  reason ``Reported``, message the record's id).
- GridweaveEndpoint: ``Ready`` (serving), ``Healthy`` (the last health probe).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from gridweave_controller.validation import check_reason

__all__ = [
    "JOB_USAGE_REPORTED",
    "ConditionStatus",
    "format_precise_timestamp",
    "format_timestamp",
    "set_condition",
]


#: The condition a finished job carries once metering holds its usage record.
JOB_USAGE_REPORTED = "UsageReported"


class ConditionStatus(StrEnum):
    """``metav1.ConditionStatus``."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


def format_timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC with a ``Z`` and whole seconds, as the apiserver writes them."""
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_precise_timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC with a ``Z`` and microseconds (``metav1.MicroTime``), for billed times."""
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def set_condition(
    conditions: Sequence[Mapping[str, Any]],
    *,
    type_: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    observed_generation: int,
    now: datetime,
) -> list[dict[str, Any]]:
    """Return a new condition list with ``type_`` set; the input is not modified.

    ``lastTransitionTime`` is kept when ``status`` does not change, set to ``now`` when it
    does (or when the condition is new). Order is kept; a new type is appended.
    """
    check_reason(reason)
    result: list[dict[str, Any]] = []
    found = False
    for existing in conditions:
        if existing.get("type") != type_:
            result.append(dict(existing))
            continue
        found = True
        unchanged = existing.get("status") == status.value
        result.append(
            {
                "type": type_,
                "status": status.value,
                "reason": reason,
                "message": message,
                "lastTransitionTime": (existing.get("lastTransitionTime") if unchanged else None)
                or format_timestamp(now),
                "observedGeneration": observed_generation,
            }
        )
    if not found:
        result.append(
            {
                "type": type_,
                "status": status.value,
                "reason": reason,
                "message": message,
                "lastTransitionTime": format_timestamp(now),
                "observedGeneration": observed_generation,
            }
        )
    return result
