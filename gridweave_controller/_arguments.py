"""Argument checks of the typed operations, run before any request (pure: no I/O)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gridweave_controller._status_change import check_text
from gridweave_controller.conditions import check_message, check_reason
from gridweave_controller.errors import Invalid
from gridweave_controller.validation import (
    USER_LABEL,
    check_gpu_indices,
    check_labels,
    check_wall_seconds,
    user_label_value,
)

__all__ = [
    "VENDORS",
    "check_int",
    "check_outcome",
    "check_placement",
    "check_vendor",
    "object_labels",
    "selector",
]

#: The vendors a job or endpoint may ask for.
VENDORS = ("nvidia", "amd", "any")


def check_int(value: int, *, field: str, minimum: int, maximum: int | None = None) -> int:
    """An integer in range, else Invalid naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise Invalid(f"{field} must be an integer >= {minimum}, not {value!r}", field=field)
    if maximum is not None and value > maximum:
        raise Invalid(f"{field} must be at most {maximum}, not {value}", field=field)
    return value


def check_vendor(vendor: str) -> str:
    """One of the vendors the CRD allows, else Invalid."""
    if vendor not in VENDORS:
        raise Invalid(f"vendor must be one of {', '.join(VENDORS)}, not {vendor!r}", field="vendor")
    return vendor


def object_labels(user_id: str, labels: Mapping[str, str] | None) -> dict[str, str]:
    """The caller's labels, checked, plus the user label derived from ``user_id``."""
    checked = check_labels(labels)
    if USER_LABEL in checked:
        raise Invalid(
            f"labels may not set {USER_LABEL}: it is derived from user_id", field="labels"
        )
    return {**checked, USER_LABEL: user_label_value(user_id)}


def check_placement(node: str, gpu_indices: Sequence[int]) -> list[int]:
    """A node name and GPU indices, checked; the indices as a list."""
    check_text(node, field="node", max_length=253)
    return check_gpu_indices(list(gpu_indices))


def check_outcome(reason: str, message: str, wall_seconds: float | None) -> None:
    """A terminal move's reason, message and wall time, checked."""
    check_reason(reason)
    check_message(message)
    check_wall_seconds(wall_seconds)


def selector(label_selector: str | None, user_id: str | None) -> str | None:
    """The label selector, narrowed to the user's label when ``user_id`` is given."""
    parts = [label_selector] if label_selector else []
    if user_id is not None:
        parts.append(f"{USER_LABEL}={user_label_value(user_id)}")
    return ",".join(parts) or None
