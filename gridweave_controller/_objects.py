"""New objects and listings by user: what the create and list operations share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from gridweave_controller.models import Endpoint, Job
from gridweave_controller.store import GROUP, VERSION
from gridweave_controller.validation import object_labels

__all__ = ["new_object", "owned_by"]

_Owned = TypeVar("_Owned", Job, Endpoint)


def new_object(
    kind: str, name: str, user_id: str, labels: Mapping[str, str] | None, spec: dict[str, Any]
) -> dict[str, Any]:
    """A new GridweaveJob or GridweaveEndpoint: its user label beside the caller's labels."""
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": kind,
        "metadata": {"name": name, "labels": object_labels(user_id, labels)},
        "spec": spec,
    }


def owned_by(items: list[_Owned], user_id: str | None) -> list[_Owned]:
    """The items whose ``spec.userId`` is ``user_id`` (all of them for None)."""
    # The user label is an index, not an identity: a sanitized-and-hashed value could equal
    # another user's literal id, so the exact user id in the spec has the last word.
    if user_id is None:
        return items
    return [item for item in items if item.spec.user_id == user_id]
