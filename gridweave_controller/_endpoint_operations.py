"""The GridweaveEndpoint operations, each declared once: its flow and its ``/v1/crd`` route.

See :mod:`gridweave_controller._job_operations` for how the clients and routes are derived.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from gridweave_controller import _endpoint_moves
from gridweave_controller._flow import Create, Delete, Flow, FlowContext, Get, List, Move
from gridweave_controller._objects import new_object, resource_fields, user_field_selector
from gridweave_controller._operation import delete, get, operation, post
from gridweave_controller._status_change import StatusChange
from gridweave_controller.errors import Invalid
from gridweave_controller.models import Endpoint, EndpointMode, Vendor
from gridweave_controller.store import ENDPOINTS
from gridweave_controller.validation import (
    MAX_IDLE_SECONDS,
    check_endpoint_phase,
    check_endpoint_source,
    check_image,
    check_int,
    check_message,
    check_name,
    check_outcome,
    check_pip,
    check_placement,
    check_text,
    check_vendor,
)
from gridweave_controller.vendors import GPU_VENDORS, GpuVendor

__all__ = ["EndpointOperations"]


def _write(context: FlowContext, endpoint_id: str, move: Move) -> Flow[Endpoint]:
    check_name(endpoint_id, field="endpoint_id")
    return Endpoint.from_raw((yield from context.write_status(ENDPOINTS, endpoint_id, move)))


class _OutcomeMove(Protocol):
    """A move out of the serving phases with a reason: stopped, failed or pending."""

    def __call__(
        self, name: str, status: Mapping[str, Any], *, reason: str, message: str, now: datetime
    ) -> StatusChange | None: ...


def _write_outcome(
    context: FlowContext, endpoint_id: str, move: _OutcomeMove, reason: str, message: str
) -> Flow[Endpoint]:
    """The stop, the failure and the return to placement: the reason checked, then ``move``."""
    check_outcome(reason, message, None)
    return (
        yield from _write(
            context,
            endpoint_id,
            lambda status, _spec, now: move(
                endpoint_id, status, reason=reason, message=message, now=now
            ),
        )
    )


class EndpointOperations:
    """Create, read, list, delete and move GridweaveEndpoints."""

    @operation(post("/endpoints", status_code=201))
    def create_endpoint(
        self: FlowContext,
        endpoint_id: str,
        user_id: str,
        *,
        vram_mb: int,
        model: str | None = None,
        image: str | None = None,
        mode: EndpointMode | None = None,
        model_ref: str | None = None,
        function_ref: str | None = None,
        owner: str | None = None,
        gpu_count: int = 1,
        vendor: Vendor = "any",
        replicas: int = 1,
        min_replicas: int = 0,
        max_replicas: int = 1,
        idle_seconds: int = 0,
        micro_credits_per_second: int = 0,
        micro_credits_per_request: int = 0,
        labels: Mapping[str, str] | None = None,
        pip: Sequence[str] | None = None,
        memory_mb: int | None = None,
        cpu_millis: int | None = None,
        gpu_models: Sequence[str] | None = None,
    ) -> Flow[Endpoint]:
        """Create a GridweaveEndpoint in phase Pending.

        ``mode`` defaults to ``vllm`` with a model (``model`` or ``model_ref``), else
        ``custom``; ``owner`` (the account billed) defaults to the user. ``pip``: PEP 508
        requirements of packages of the index, installed on the node before a replica's
        container starts (custom mode only: vllm and transformers serve with the node's own
        packages). ``memory_mb``/``cpu_millis``: each replica's container's memory (MiB)
        and CPU (thousandths of a core), None: the node's default per GPU; ``gpu_models``:
        the GPU models that will do, any of them, None: any of ``vendor``.
        """
        check_name(endpoint_id, field="endpoint_id")
        resolved_mode = check_endpoint_source(
            mode, model=model, image=image, model_ref=model_ref, function_ref=function_ref
        )
        minimum = check_int(min_replicas, field="min_replicas", minimum=0, maximum=64)
        maximum = check_int(max_replicas, field="max_replicas", minimum=1, maximum=64)
        if minimum > maximum:
            raise Invalid(
                f"min_replicas ({minimum}) must not exceed max_replicas ({maximum})",
                field="min_replicas",
            )
        spec: dict[str, Any] = {
            "userId": check_text(user_id, field="user_id", max_length=253),
            "owner": check_text(owner or user_id, field="owner", max_length=253),
            "mode": resolved_mode,
            "vramMb": check_int(vram_mb, field="vram_mb", minimum=1),
            "gpuCount": check_int(gpu_count, field="gpu_count", minimum=1, maximum=64),
            "vendor": check_vendor(vendor),
            "replicas": check_int(replicas, field="replicas", minimum=0, maximum=64),
            "minReplicas": minimum,
            "maxReplicas": maximum,
            "idleSeconds": check_int(
                idle_seconds, field="idle_seconds", minimum=0, maximum=MAX_IDLE_SECONDS
            ),
            "pricing": {
                "microCreditsPerSecond": check_int(
                    micro_credits_per_second, field="micro_credits_per_second", minimum=0
                ),
                "microCreditsPerRequest": check_int(
                    micro_credits_per_request, field="micro_credits_per_request", minimum=0
                ),
            },
        }
        spec.update(resource_fields(memory_mb, cpu_millis, gpu_models))
        if image is not None:
            spec["image"] = check_image(image)
        requirements = [] if pip is None else check_pip(pip)
        if requirements and resolved_mode != "custom":
            raise Invalid(
                f"pip is only for a custom endpoint: a {resolved_mode} endpoint serves with "
                "the node's own packages",
                field="pip",
            )
        if requirements:
            spec["pip"] = requirements
        for key, value, field, max_length in (
            ("model", model, "model", 512),
            ("modelRef", model_ref, "model_ref", 2048),
            ("functionRef", function_ref, "function_ref", 2048),
        ):
            if value is not None:
                spec[key] = check_text(value, field=field, max_length=max_length)
        body = new_object("GridweaveEndpoint", endpoint_id, user_id, labels, spec)
        return Endpoint.from_raw((yield from Create(self.namespace, ENDPOINTS, body).result()))

    @operation(get("/endpoints/{endpoint_id}"))
    def get_endpoint(self: FlowContext, endpoint_id: str) -> Flow[Endpoint]:
        """Read one endpoint."""
        check_name(endpoint_id, field="endpoint_id")
        return Endpoint.from_raw((yield from Get(self.namespace, ENDPOINTS, endpoint_id).result()))

    @operation(get("/endpoints"))
    def list_endpoints(
        self: FlowContext, label_selector: str | None = None, *, user_id: str | None = None
    ) -> Flow[list[Endpoint]]:
        """List endpoints, optionally by label selector and by user."""
        call = List(self.namespace, ENDPOINTS, label_selector, user_field_selector(user_id))
        return [Endpoint.from_raw(raw) for raw in (yield from call.result())]

    @operation(delete("/endpoints/{endpoint_id}"))
    def delete_endpoint(self: FlowContext, endpoint_id: str) -> Flow[None]:
        """Delete one endpoint."""
        check_name(endpoint_id, field="endpoint_id")
        yield from Delete(self.namespace, ENDPOINTS, endpoint_id).result()

    @operation(post("/endpoints/{endpoint_id}/deploying"))
    def set_endpoint_deploying(
        self: FlowContext,
        endpoint_id: str,
        node: str,
        gpu_indices: Sequence[int],
        vendor: GpuVendor | None = None,
        from_phase: str | None = None,
    ) -> Flow[Endpoint]:
        """Pending, Running, Stopped or Failed -> Deploying on a node and its GPUs (of
        ``vendor``, when known: the maker billing prices the endpoint at).

        ``from_phase``: only from that phase (a placement decided on a Pending endpoint is
        refused, InvalidTransition, once the endpoint was stopped meanwhile).
        """
        indices = check_placement(node, gpu_indices)
        expected = None if from_phase is None else check_endpoint_phase(from_phase, "from_phase")
        if vendor is not None and vendor not in GPU_VENDORS:
            raise Invalid(
                f"vendor must be one of {', '.join(GPU_VENDORS)}, not {vendor!r}", field="vendor"
            )
        return (
            yield from _write(
                self,
                endpoint_id,
                lambda status, _spec, now: _endpoint_moves.deploying(
                    endpoint_id,
                    status,
                    node=node,
                    gpu_indices=indices,
                    vendor=vendor,
                    now=now,
                    from_phase=expected,
                ),
            )
        )

    @operation(post("/endpoints/{endpoint_id}/running"))
    def set_endpoint_running(self: FlowContext, endpoint_id: str, url: str) -> Flow[Endpoint]:
        """Deploying -> Running at ``url``."""
        check_text(url, field="url", max_length=2048)
        return (
            yield from _write(
                self,
                endpoint_id,
                lambda status, _spec, now: _endpoint_moves.running(
                    endpoint_id, status, url=url, now=now
                ),
            )
        )

    @operation(post("/endpoints/{endpoint_id}/stopped"))
    def set_endpoint_stopped(
        self: FlowContext, endpoint_id: str, reason: str, message: str = ""
    ) -> Flow[Endpoint]:
        """Pending, Deploying or Running -> Stopped."""
        return (
            yield from _write_outcome(self, endpoint_id, _endpoint_moves.stopped, reason, message)
        )

    @operation(post("/endpoints/{endpoint_id}/failed"))
    def set_endpoint_failed(
        self: FlowContext, endpoint_id: str, reason: str, message: str = ""
    ) -> Flow[Endpoint]:
        """Pending, Deploying or Running -> Failed."""
        return (
            yield from _write_outcome(self, endpoint_id, _endpoint_moves.failed, reason, message)
        )

    @operation(post("/endpoints/{endpoint_id}/pending"))
    def set_endpoint_pending(
        self: FlowContext, endpoint_id: str, reason: str, message: str = ""
    ) -> Flow[Endpoint]:
        """Deploying or Running -> Pending: back to placement (its node was lost)."""
        return (
            yield from _write_outcome(self, endpoint_id, _endpoint_moves.pending, reason, message)
        )

    @operation(post("/endpoints/{endpoint_id}/waiting"))
    def set_endpoint_waiting(
        self: FlowContext, endpoint_id: str, reason: str, message: str = ""
    ) -> Flow[Endpoint]:
        """Pending: why it is not placed yet (``reason``, ``message``, ``Ready`` False)."""
        check_outcome(reason, message, None)
        return (
            yield from _write(
                self,
                endpoint_id,
                lambda status, _spec, _now: _endpoint_moves.waiting(
                    endpoint_id, status, reason=reason, message=message
                ),
            )
        )

    @operation(post("/endpoints/{endpoint_id}/health"))
    def set_endpoint_health(
        self: FlowContext,
        endpoint_id: str,
        healthy: bool,
        message: str = "",
        ready_replicas: int | None = None,
    ) -> Flow[Endpoint]:
        """Record a health probe: ``health``, ``readyReplicas`` and the Healthy condition."""
        check_message(message)
        if ready_replicas is not None:
            check_int(ready_replicas, field="ready_replicas", minimum=0)
        return (
            yield from _write(
                self,
                endpoint_id,
                lambda status, _spec, _now: _endpoint_moves.health(
                    endpoint_id,
                    status,
                    healthy=healthy,
                    message=message,
                    ready_replicas=ready_replicas,
                ),
            )
        )
