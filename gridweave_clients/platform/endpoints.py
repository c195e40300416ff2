"""The platform's endpoint routes: their wire models and typed operations (sans-IO).

A user names an endpoint (``name``, a DNS-1123 label); the platform serves it at
``/v1/endpoints/{name}/...`` with the user's API key. A custom endpoint's class travels as
base64 of the SDK's pickled bytes; the platform stores it as opaque bytes and never
unpickles it. Money is integer micro-credits.
"""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Annotated

from pydantic import Base64Bytes, BaseModel, Field, validate_call

from gridweave_clients._core import Operation, model_operation
from gridweave_clients.fields import RequestBody
from gridweave_clients.gateway.endpoints import (
    MAX_REPLICAS,
    EndpointLogsResponse,
    EndpointMode,
    IdleSeconds,
    LogLines,
    ModelName,
    Replicas,
)
from gridweave_clients.gateway.models import (
    CpuMillis,
    GpuCount,
    GpuModels,
    MemoryMb,
    ObjectRef,
    Vendor,
    VramMb,
)
from gridweave_clients.images import ImageName
from gridweave_clients.pip import PipRequirements
from gridweave_controller.phases import EndpointPhase

__all__ = [
    "MAX_NAME_LENGTH",
    "DeployEndpointRequest",
    "EndpointListResponse",
    "EndpointLogsResponse",
    "EndpointName",
    "EndpointResponse",
    "EndpointStatsResponse",
    "LogLines",
    "deploy_endpoint",
    "get_endpoint",
    "get_endpoint_logs",
    "get_endpoint_stats",
    "list_endpoints",
    "stop_endpoint",
]

#: The longest endpoint name: the platform appends ``-`` and 10 hex digits to make the id.
MAX_NAME_LENGTH = 50
EndpointName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_NAME_LENGTH,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        description="The endpoint's name: lowercase letters, digits and '-', 50 at most.",
    ),
]


class DeployEndpointRequest(RequestBody):
    """Serve a model (``vllm``, ``transformers``: ``model`` or ``model_ref``) or a pickled
    class (``custom``: ``function``); ``min_replicas`` <= ``max_replicas``."""

    name: EndpointName
    mode: EndpointMode
    model: ModelName | None = Field(default=None, description="The model's id or name.")
    model_ref: ObjectRef | None = Field(
        default=None, description="The model directory: an object-storage URI or a local path."
    )
    function: Base64Bytes | None = Field(
        default=None, description="base64 of the pickled class (cloudpickle), custom mode."
    )
    image: ImageName | None = Field(
        default=None,
        description=(
            "custom mode: the image to run in, from the platform's registry. With a class, "
            "the class is served in it; alone, the image's own server (its command, given "
            "PORT) is served."
        ),
    )
    pip: PipRequirements | None = Field(
        default=None,
        description=(
            "custom mode: PEP 508 requirements of packages of the index by name "
            "(numpy==2.1.3), installed on the node (once per image and list) before a "
            "replica's container starts; a failed install fails the endpoint "
            "PipInstallFailed."
        ),
    )
    vram_mb: VramMb
    gpu_count: GpuCount = 1
    vendor: Vendor = "any"
    gpu_models: GpuModels | None = None
    memory_mb: MemoryMb | None = Field(
        default=None, description="Each replica's memory limit, MiB (none: the node's default)."
    )
    cpu_millis: CpuMillis | None = Field(
        default=None,
        description="Each replica's CPU, thousandths of a core (none: the node's default).",
    )
    min_replicas: Replicas = 0
    max_replicas: Annotated[int, Field(strict=True, ge=1, le=MAX_REPLICAS)] = 1
    idle_seconds: IdleSeconds = 300


class EndpointResponse(BaseModel):
    """An endpoint as its user sees it; ``path`` is where the platform serves it."""

    name: str
    endpoint_id: str
    path: str = Field(description="The platform path that serves it: /v1/endpoints/{name}.")
    mode: str
    model: str | None
    image: str | None = Field(
        default=None, description="The image it runs in, pinned to its digest (custom mode)."
    )
    pip: list[str] | None = Field(
        default=None, description="The requirements installed for its replicas (custom mode)."
    )
    phase: EndpointPhase
    reason: str | None
    message: str | None
    node: str | None
    gpu_indices: list[int]
    ready_replicas: int
    health: str
    vram_mb: int
    gpu_count: int
    vendor: str
    gpu_models: list[str] | None = Field(
        default=None, description="The GPU models that will do (none: any of the vendor)."
    )
    memory_mb: int | None = Field(
        default=None, description="Each replica's memory limit, MiB (none: the node's default)."
    )
    cpu_millis: int | None = Field(
        default=None, description="Each replica's CPU, thousandths of a core (none: the default)."
    )
    min_replicas: int
    max_replicas: int
    idle_seconds: int
    created_at: datetime | None
    started_at: datetime | None
    stopped_at: datetime | None
    billed_seconds: int = Field(
        description="Seconds billed so far: its usage records' (period by period while it runs)."
    )
    price_per_second: int | None = Field(
        default=None,
        description=(
            "Micro-credits per running second of one replica, at the price of the GPUs it runs "
            "on (vendor any: the placed vendor's; None until placed)."
        ),
    )
    max_price_per_second: int | None = Field(
        default=None,
        description=(
            "The most a running second of one replica may cost: the dearest vendor's price "
            "for vendor any (what its credit holds are sized by), else price_per_second."
        ),
    )
    waking_reason: str | None = Field(
        default=None,
        description=(
            "Scaled to zero, woken by a call and not placed yet: why it waits "
            "(WaitingForGpu, RealGpuBusy). None otherwise."
        ),
    )
    waking_message: str | None = Field(
        default=None, description="Why the woken endpoint waits, in words."
    )


class EndpointListResponse(BaseModel):
    """The caller's endpoints, oldest first."""

    endpoints: list[EndpointResponse]


class EndpointStatsResponse(BaseModel):
    """The calls an endpoint took through the platform process that answers, since ``since``
    (kept in memory: they reset when the platform restarts). Latency is to the endpoint's
    response headers, wakes included, over the last ``latency_samples`` calls."""

    name: str
    since: datetime = Field(description="When the counting began (the first call recorded).")
    process_started_at: datetime = Field(description="When this platform process started.")
    requests: int = 0
    ok: int = Field(default=0, description="Answers with a 1xx, 2xx or 3xx status.")
    client_errors: int = Field(default=0, description="Answers with a 4xx status.")
    server_errors: int = Field(default=0, description="Answers with a 5xx status.")
    unreachable: int = Field(default=0, description="Calls the endpoint never answered.")
    cold_starts: int = Field(default=0, description="Calls that woke the endpoint.")
    last_cold_start_ms: float | None = None
    last_request_at: datetime | None = None
    latency_samples: int = 0
    latency_p50_ms: float | None = None
    latency_p90_ms: float | None = None
    latency_p99_ms: float | None = None


@validate_call
def deploy_endpoint(
    name: EndpointName,
    *,
    mode: EndpointMode,
    vram_mb: VramMb,
    model: ModelName | None = None,
    model_ref: ObjectRef | None = None,
    function: bytes | None = None,
    image: ImageName | None = None,
    pip: PipRequirements | None = None,
    gpu_count: GpuCount = 1,
    vendor: Vendor = "any",
    gpu_models: GpuModels | None = None,
    memory_mb: MemoryMb | None = None,
    cpu_millis: CpuMillis | None = None,
    min_replicas: Replicas = 0,
    max_replicas: Annotated[int, Field(strict=True, ge=1, le=MAX_REPLICAS)] = 1,
    idle_seconds: IdleSeconds = 300,
) -> Operation[EndpointResponse]:
    """Deploy an endpoint (402 without the credits of two billing periods at max replicas;
    409 a name in service: a Failed or Stopped endpoint, Idle excepted, is replaced)."""
    body = DeployEndpointRequest(
        name=name,
        mode=mode,
        model=model,
        model_ref=model_ref,
        function=None if function is None else base64.b64encode(function),
        image=image,
        pip=pip,
        vram_mb=vram_mb,
        gpu_count=gpu_count,
        vendor=vendor,
        gpu_models=gpu_models,
        memory_mb=memory_mb,
        cpu_millis=cpu_millis,
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        idle_seconds=idle_seconds,
    )
    return model_operation("POST", "/v1/endpoints", EndpointResponse, body=body)


def list_endpoints() -> Operation[EndpointListResponse]:
    """The caller's endpoints."""
    return model_operation("GET", "/v1/endpoints", EndpointListResponse)


@validate_call
def get_endpoint(name: EndpointName) -> Operation[EndpointResponse]:
    """One of the caller's endpoints (another user's is 404)."""
    return model_operation("GET", f"/v1/endpoints/{name}", EndpointResponse)


@validate_call
def stop_endpoint(name: EndpointName) -> Operation[EndpointResponse]:
    """Stop the endpoint: its GPUs freed, its usage settled (repeated: no change)."""
    return model_operation("DELETE", f"/v1/endpoints/{name}", EndpointResponse)


@validate_call
def get_endpoint_stats(name: EndpointName) -> Operation[EndpointStatsResponse]:
    """The calls one of the caller's endpoints took: counts, latency, cold starts."""
    return model_operation("GET", f"/v1/endpoints/{name}/-/stats", EndpointStatsResponse)


@validate_call
def get_endpoint_logs(
    name: EndpointName, *, lines: LogLines = 200
) -> Operation[EndpointLogsResponse]:
    """The last ``lines`` of each replica's stdout and stderr (another user's endpoint is 404)."""
    return model_operation(
        "GET", f"/v1/endpoints/{name}/-/logs", EndpointLogsResponse, params={"lines": str(lines)}
    )
