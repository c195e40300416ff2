"""job_gateway's endpoint API: its wire models and typed operations, each declared once.

An endpoint is a model (or a user's class) served by Ray Serve on the GPUs the gateway
placed it on. Creating is not replayed once sent (a lost answer is read back with
:func:`get_endpoint`: a second create of the same id is a 409); reads, stop and wake are.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, Field, validate_call

from gridweave_clients._core import Operation, model_operation
from gridweave_clients.fields import MAX_REPLICAS, EndpointId, RequestBody, UserId
from gridweave_clients.gateway.models import (
    CpuMillis,
    GpuCount,
    GpuModels,
    MemoryMb,
    ObjectRef,
    Vendor,
    VramMb,
)
from gridweave_clients.gateway.quotas import UserQuotaModel
from gridweave_clients.images import PinnedImage
from gridweave_clients.pip import PipRequirements
from gridweave_controller.phases import EndpointPhase
from gridweave_controller.vendors import GpuVendor

__all__ = [
    "MAX_LOG_LINES",
    "MAX_REPLICAS",
    "MAX_WAKE_SECONDS",
    "CreateEndpointRequest",
    "EndpointId",
    "EndpointListResponse",
    "EndpointLogsResponse",
    "EndpointMode",
    "EndpointResponse",
    "IdleSeconds",
    "LogLines",
    "ModelName",
    "ReplicaLog",
    "ReplicaLogStream",
    "Replicas",
    "StopEndpointRequest",
    "WakeEndpointRequest",
    "create_endpoint",
    "delete_endpoint",
    "get_endpoint",
    "get_endpoint_logs",
    "list_endpoints",
    "stop_endpoint",
    "wake_endpoint",
]

#: The longest a wake may long-poll for the endpoint to run, seconds.
MAX_WAKE_SECONDS = 600
#: The most lines of one replica's stream a logs read answers.
MAX_LOG_LINES = 1000

EndpointMode = Literal["vllm", "transformers", "custom"]
Replicas = Annotated[int, Field(strict=True, ge=0, le=MAX_REPLICAS)]
IdleSeconds = Annotated[
    int,
    Field(
        strict=True, ge=0, le=7 * 24 * 3600, description="Idle seconds to scale to zero (0 never)."
    ),
]
ModelName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=512,
        pattern=r"^[\x21-\x7e]+$",
        description="The model's id or name (printable ASCII, no spaces).",
    ),
]
LogLines = Annotated[
    int,
    Field(
        ge=1,
        le=MAX_LOG_LINES,
        description="The most lines of each replica's stdout and stderr, the latest.",
    ),
]
StopReason = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z][A-Za-z0-9]*$")]


class CreateEndpointRequest(RequestBody):
    """Serve ``mode`` on ``gpu_count`` GPUs of one node with ``vram_mb`` free on each."""

    endpoint_id: EndpointId
    user_id: UserId
    owner: UserId | None = Field(default=None, description="The account billed; the user's.")
    mode: EndpointMode
    model: ModelName | None = None
    model_ref: ObjectRef | None = Field(
        default=None, description="The model directory: an object-storage URI or a local path."
    )
    function_ref: ObjectRef | None = Field(
        default=None, description="The pickled class (cloudpickle), custom mode."
    )
    image: PinnedImage | None = Field(
        default=None, description="custom mode: the image it runs in, pinned to its digest."
    )
    pip: PipRequirements | None = Field(
        default=None,
        description=(
            "custom mode: PEP 508 requirements of packages of the index by name, installed on "
            "the node (once per image and list) before a replica's container starts."
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
    replace_ended: bool = Field(
        default=False,
        description=(
            "Replace an endpoint of this id that is Failed or Stopped for a reason other "
            "than Idle (its object deleted, this one created); any other is still a 409."
        ),
    )
    quota: UserQuotaModel | None = Field(
        default=None,
        description="What the user may hold at once (the platform's); 429 past it, nothing made.",
    )


class WakeEndpointRequest(RequestBody):
    """What the user of a woken endpoint may hold at once (the platform's quota)."""

    quota: UserQuotaModel | None = Field(
        default=None,
        description="The user's quota; 429 when the woken endpoint would pass it.",
    )


class StopEndpointRequest(RequestBody):
    """Stop an endpoint with a reason (``OutOfCredits`` from billing)."""

    reason: StopReason
    message: str = Field(default="", max_length=1024)


class EndpointResponse(BaseModel):
    """An endpoint: what was asked, where it is served, in which phase, how healthy."""

    id: str
    user_id: str
    owner: str | None = None
    mode: str
    model: str | None = None
    image: str | None = None
    pip: list[str] | None = Field(
        default=None, description="The requirements installed for its replicas (none: none)."
    )
    phase: EndpointPhase
    reason: str | None = None
    message: str | None = None
    url: str | None = None
    node: str | None = None
    gpu_indices: list[int] = Field(default_factory=list)
    placed_vendor: GpuVendor | None = Field(
        default=None, description="The maker of the GPUs it was placed on; None: unknown."
    )
    ready_replicas: int = 0
    health: str = "Unknown"
    created_at: datetime | None = None
    started_at: datetime | None = None
    stopped_at: datetime | None = None
    run_replicas: int | None = Field(
        default=None,
        description="The ready replicas last probed in the current (or last) run; kept at its end.",
    )
    billed_seconds: int = 0
    vram_mb: int
    gpu_count: int = 1
    vendor: str = "any"
    gpu_models: list[str] | None = Field(
        default=None, description="The GPU models that will do (none: any of the vendor)."
    )
    memory_mb: int | None = Field(
        default=None, description="Each replica's memory limit, MiB (none: the node's default)."
    )
    cpu_millis: int | None = Field(
        default=None, description="Each replica's CPU, thousandths of a core (none: the default)."
    )
    min_replicas: int = 0
    max_replicas: int = 1
    idle_seconds: int = 0
    waking_reason: str | None = Field(
        default=None,
        description="Woken and not placed yet (still Stopped): why it waits, e.g. RealGpuBusy.",
    )
    waking_message: str | None = Field(
        default=None, description="The scheduler's words on why the woken endpoint waits."
    )

    @property
    def billing_owner(self) -> str:
        """The account billed."""
        return self.owner or self.user_id


class EndpointListResponse(BaseModel):
    """Endpoints, oldest first."""

    endpoints: list[EndpointResponse]


class ReplicaLogStream(BaseModel):
    """The last lines of one stream of a replica's process (the user's text, never markup)."""

    stream: Literal["stdout", "stderr"]
    lines: list[str]
    truncated: bool = Field(description="Older lines were left out (the line or byte bound).")


class ReplicaLog(BaseModel):
    """One Serve replica of the endpoint and what its process wrote."""

    replica: str = Field(description="Ray Serve's id of the replica.")
    state: str = Field(description="Its Ray actor's state: ALIVE, RESTARTING, DEAD, ...")
    started_at: datetime | None = None
    streams: list[ReplicaLogStream] = Field(default_factory=list)
    error: str | None = Field(default=None, description="Why its files could not be read.")


class EndpointLogsResponse(BaseModel):
    """The endpoint's replicas (running ones first, then the latest ended), each with the
    last lines of its stdout and stderr; ``message`` says why there are none."""

    replicas: list[ReplicaLog]
    lines: int = Field(description="The most lines given per stream.")
    message: str | None = None


@validate_call
def create_endpoint(request: CreateEndpointRequest) -> Operation[EndpointResponse]:
    """Create the endpoint (Pending); 422 naming the field, 409 for a taken id."""
    return model_operation("POST", "/v1/endpoints", EndpointResponse, body=request)


@validate_call
def get_endpoint(endpoint_id: EndpointId) -> Operation[EndpointResponse]:
    """One endpoint."""
    return model_operation("GET", f"/v1/endpoints/{endpoint_id}", EndpointResponse)


@validate_call
def get_endpoint_logs(
    endpoint_id: EndpointId, *, lines: LogLines = 200
) -> Operation[EndpointLogsResponse]:
    """The last ``lines`` of each replica's stdout and stderr (running replicas and the
    latest ended ones)."""
    return model_operation(
        "GET",
        f"/v1/endpoints/{endpoint_id}/logs",
        EndpointLogsResponse,
        params={"lines": str(lines)},
    )


@validate_call
def list_endpoints(
    user_id: UserId | None = None, *, phase: EndpointPhase | None = None
) -> Operation[EndpointListResponse]:
    """The endpoints of a user (or every user's), optionally in one phase."""
    params: dict[str, str] = {}
    if user_id is not None:
        params["user_id"] = user_id
    if phase is not None:
        params["phase"] = phase.value
    return model_operation("GET", "/v1/endpoints", EndpointListResponse, params=params)


@validate_call
def delete_endpoint(endpoint_id: EndpointId) -> Operation[EndpointResponse]:
    """Stop the endpoint (Stopped, VRAM freed); idempotent."""
    return model_operation("DELETE", f"/v1/endpoints/{endpoint_id}", EndpointResponse)


@validate_call
def wake_endpoint(
    endpoint_id: EndpointId,
    *,
    wait: Annotated[float, Field(ge=0, le=MAX_WAKE_SECONDS)] = 0,
    quota: UserQuotaModel | None = None,
) -> Operation[EndpointResponse]:
    """Deploy a scaled-to-zero endpoint again and wait (bounded) until it runs; 429 when
    it would take its user past ``quota`` (it stays scaled to zero).

    The answer is the endpoint as it is when it runs or the wait ends: check its phase.
    """
    params = {"wait": str(wait)} if wait else None
    return model_operation(
        "POST",
        f"/v1/endpoints/{endpoint_id}/wake",
        EndpointResponse,
        body=None if quota is None else WakeEndpointRequest(quota=quota),
        params=params,
        idempotent=True,
        wait_seconds=wait,
    )


@validate_call
def stop_endpoint(
    endpoint_id: EndpointId, request: StopEndpointRequest
) -> Operation[EndpointResponse]:
    """Stop the endpoint with ``request.reason`` (Stopped; repeated: no change)."""
    return model_operation(
        "POST", f"/v1/endpoints/{endpoint_id}/stop", EndpointResponse, body=request, idempotent=True
    )
