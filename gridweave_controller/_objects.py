"""New objects and their resource fields, the selector of a user's objects, and a caller's
known copy of an object."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from gridweave_controller.errors import Invalid
from gridweave_controller.models import Endpoint, Job
from gridweave_controller.store import GROUP, VERSION
from gridweave_controller.validation import (
    MAX_CPU_MILLIS,
    MAX_MEMORY_MB,
    MIN_CPU_MILLIS,
    MIN_MEMORY_MB,
    check_gpu_models,
    check_int,
    check_text,
    object_labels,
)

__all__ = ["check_known", "new_object", "resource_fields", "user_field_selector"]

_Known = TypeVar("_Known", Job, Endpoint)


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


def resource_fields(
    memory_mb: int | None, cpu_millis: int | None, gpu_models: Sequence[str] | None
) -> dict[str, Any]:
    """The spec fields of a job's or an endpoint replica's memory (MiB), CPU (thousandths of
    a core) and GPU models, each checked; one left out (None) is not in the spec."""
    fields: dict[str, Any] = {}
    if memory_mb is not None:
        fields["memoryMb"] = check_int(
            memory_mb, field="memory_mb", minimum=MIN_MEMORY_MB, maximum=MAX_MEMORY_MB
        )
    if cpu_millis is not None:
        fields["cpuMillis"] = check_int(
            cpu_millis, field="cpu_millis", minimum=MIN_CPU_MILLIS, maximum=MAX_CPU_MILLIS
        )
    if gpu_models is not None:
        fields["gpuModels"] = check_gpu_models(gpu_models)
    return fields


def user_field_selector(user_id: str | None) -> str | None:
    """The field selector of a user's objects: ``spec.userId`` (a selectable field).

    Listing by user reads ``spec.userId`` itself, not the user label, so an object made
    without the label (by kubectl, by another tool) is found too. ``\\``, ``,`` and ``=`` in
    the id are escaped as the apiserver's field-selector grammar asks.
    """
    if user_id is None:
        return None
    check_text(user_id, field="user_id", max_length=253)
    escaped = user_id.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
    return f"spec.userId={escaped}"


def check_known(known: _Known, kind: type[_Known], name: str, *, field: str) -> _Known:
    """A caller's copy of the object ``name``: of that kind and name, with a resourceVersion."""
    if not isinstance(known, kind):
        raise Invalid(f"{field} must be a {kind.KIND}, not {type(known).__name__}", field=field)
    metadata = known.raw.get("metadata") or {}
    if metadata.get("name") != name:
        raise Invalid(f"{field} is {metadata.get('name')!r}, not {name!r}", field=field)
    if not metadata.get("resourceVersion"):
        raise Invalid(f"{field} has no resourceVersion: it was not read from a store", field=field)
    return known
