"""job_gateway's wire models: the bodies it validates and answers, shared with clients."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, Field

from gridweave_clients.fields import PrintableId, RequestBody, UserId
from gridweave_clients.gateway.quotas import UserQuotaModel
from gridweave_clients.images import PinnedImage
from gridweave_clients.maps import MapShareModel
from gridweave_clients.metering.models import MAX_GPU_COUNT, MAX_WALL_SECONDS
from gridweave_clients.pip import PipRequirements
from gridweave_controller.operations import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_SECONDS
from gridweave_controller.phases import JobPhase
from gridweave_controller.validation import (
    GPU_MODEL_PATTERN,
    MAX_CPU_MILLIS,
    MAX_GPU_MODEL_LENGTH,
    MAX_GPU_MODELS,
    MAX_MEMORY_MB,
    MAX_PRIORITY,
    MIN_CPU_MILLIS,
    MIN_MEMORY_MB,
    MIN_PRIORITY,
)

__all__ = [
    "GpuModels",
    "MAX_VRAM_MB",
    "MAX_WAIT_SECONDS",
    "WaitSeconds",
    "FunctionName",
    "GpuCount",
    "MaxRetries",
    "MemoryMb",
    "CpuMillis",
    "TimeoutSeconds",
    "Vendor",
    "VramMb",
    "InventoryAllocationResponse",
    "InventoryGpuResponse",
    "InventoryNodeResponse",
    "InventoryResponse",
    "JobConditionResponse",
    "JobId",
    "JobListResponse",
    "JobResponse",
    "JobResultResponse",
    "ObjectRef",
    "SubmitJobRequest",
]

#: The largest VRAM one GPU may declare (the inventory's bound): 16 TiB.
MAX_VRAM_MB = 16 * 2**20
#: The longest long poll of a job (``GET /v1/jobs/{id}?wait=``), seconds.
MAX_WAIT_SECONDS = 30
WaitSeconds = Annotated[float, Field(ge=0, le=MAX_WAIT_SECONDS)]

JobId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=63,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        description="A DNS-1123 label: the GridweaveJob's name.",
    ),
]
ObjectRef = Annotated[
    str,
    Field(
        min_length=1,
        max_length=2048,
        pattern=r"^[\x21-\x7e]+$",
        description="A URI in object storage (file:// or s3://).",
    ),
]


#: What a job asks for, the same for the gateway's and the platform's submissions.
VramMb = Annotated[int, Field(strict=True, ge=1, le=MAX_VRAM_MB, description="VRAM per GPU, MiB.")]
GpuCount = Annotated[int, Field(strict=True, ge=1, le=MAX_GPU_COUNT, description="GPUs, one node.")]
Vendor = Literal["nvidia", "amd", "any"]
TimeoutSeconds = Annotated[
    int, Field(strict=True, ge=1, le=MAX_WALL_SECONDS, description="Longest run, seconds.")
]
MaxRetries = Annotated[int, Field(strict=True, ge=0, le=100, description="Runs after the first.")]
MemoryMb = Annotated[
    int,
    Field(
        strict=True,
        ge=MIN_MEMORY_MB,
        le=MAX_MEMORY_MB,
        description="The container's memory limit, MiB (none: the node's default per GPU).",
    ),
]
CpuMillis = Annotated[
    int,
    Field(
        strict=True,
        ge=MIN_CPU_MILLIS,
        le=MAX_CPU_MILLIS,
        description=(
            "The container's CPU, thousandths of a core (none: the node's default per GPU)."
        ),
    ),
]


def _distinct(models: list[str]) -> list[str]:
    if len(set(models)) != len(models):
        raise ValueError("names a GPU model twice")
    return models


#: The GPU models a request will take, any of them (``A100``, ``H100 80GB``: every word a
#: word of the GPU's model); none: any model of the vendor.
GpuModels = Annotated[
    list[
        Annotated[
            str,
            Field(
                strict=True,
                min_length=1,
                max_length=MAX_GPU_MODEL_LENGTH,
                pattern=GPU_MODEL_PATTERN,
            ),
        ]
    ],
    Field(
        min_length=1,
        max_length=MAX_GPU_MODELS,
        description="GPU models that will do, any of them (none: any model of the vendor).",
    ),
    AfterValidator(_distinct),
]
#: A label for people (the SDK sends the function's qualified name); never used to run it.
FunctionName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=253,
        pattern=r"^[^\x00-\x1f\x7f]+$",
        description="The function's name, for job lists (no control characters).",
    ),
]


class SubmitJobRequest(RequestBody):
    """A function to run on ``gpu_count`` GPUs of one node with ``vram_mb`` free on each."""

    job_id: JobId
    user_id: UserId
    owner: UserId | None = Field(default=None, description="The account billed; the user's.")
    function_ref: ObjectRef = Field(description="The pickled function (cloudpickle).")
    args_ref: ObjectRef | None = Field(
        default=None, description="The pickled (args, kwargs); none: called without arguments."
    )
    vram_mb: VramMb
    gpu_count: GpuCount = 1
    vendor: Vendor = "any"
    timeout_seconds: TimeoutSeconds = DEFAULT_TIMEOUT_SECONDS
    max_retries: MaxRetries = DEFAULT_MAX_RETRIES
    memory_mb: MemoryMb | None = None
    cpu_millis: CpuMillis | None = None
    gpu_models: GpuModels | None = None
    image: PinnedImage | None = None
    pip: PipRequirements | None = None
    priority: int = Field(default=0, strict=True, ge=MIN_PRIORITY, le=MAX_PRIORITY)
    function_name: FunctionName | None = None
    hold_reference: PrintableId | None = Field(
        default=None,
        description="The reference of the job's credit hold: the job id (the default).",
    )
    map: MapShareModel | None = Field(
        default=None, description="The job is one worker of a map: its share of the inputs."
    )
    quota: UserQuotaModel | None = Field(
        default=None,
        description="What the user may hold at once (the platform's); 429 past it, nothing made.",
    )


class JobConditionResponse(BaseModel):
    """One of a job's status conditions (``Allocated``, ``Running``, ``Finished``,
    ``UsageReported``): its status and when, and why, it last changed."""

    type: str
    status: Literal["True", "False", "Unknown"]
    reason: str
    message: str = ""
    last_transition_time: datetime


class JobResponse(BaseModel):
    """A job: what was asked, where it runs, how it ended."""

    job_id: str
    user_id: str
    owner: str
    function_ref: str
    args_ref: str | None
    function_name: str | None = None
    vram_mb: int
    gpu_count: int
    vendor: str
    timeout_seconds: int | None
    max_retries: int | None
    memory_mb: int | None = None
    cpu_millis: int | None = None
    gpu_models: list[str] | None = None
    image: str | None = None
    pip: list[str] | None = None
    map: MapShareModel | None = None
    priority: int
    hold_reference: str
    phase: JobPhase
    node: str | None
    gpu_indices: list[int]
    attempts: int
    reason: str | None
    message: str | None
    created_at: datetime | None
    allocated_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    wall_seconds: float | None
    billed_seconds: int | None
    result_ref: str | None
    result_sha256: str | None = Field(
        default=None, description="SHA-256 of the result object, from the job's status."
    )
    conditions: list[JobConditionResponse] = Field(default_factory=list)


class JobListResponse(BaseModel):
    """Jobs, oldest first; or one page, newest first, when a ``limit`` was asked: then
    ``total`` counts the jobs matching the filters and ``next_cursor`` asks for the next page
    (None on the last)."""

    jobs: list[JobResponse]
    total: int | None = None
    next_cursor: str | None = None


class JobResultResponse(BaseModel):
    """Where a job's outcome is: object storage URIs (the gateway never reads them).

    ``result_ref``: the pickled return value (Completed); ``error_ref``: the remote
    traceback (Failed by an exception); ``stdout_ref`` / ``stderr_ref``: the output of the
    last attempt that ran. None where there is nothing (yet).
    """

    job_id: str
    phase: JobPhase
    finished: bool
    reason: str | None
    message: str | None
    wall_seconds: float | None
    result_ref: str | None
    result_sha256: str | None = Field(
        default=None, description="SHA-256 of the result object, from the job's status."
    )
    error_ref: str | None
    stdout_ref: str | None
    stderr_ref: str | None


class InventoryAllocationResponse(BaseModel):
    """A job or endpoint holding VRAM on a GPU (an endpoint: for every replica it may run)."""

    kind: Literal["job", "endpoint"]
    name: str = Field(description="The job id or the endpoint id.")
    display_name: str | None = Field(
        default=None,
        description="What the platform's pages call it (the job id, the endpoint's own name).",
    )
    user_id: str | None = Field(description="Who submitted it; None: not known yet.")
    owner: str | None = Field(description="The account billed; None: not known yet.")
    vram_mb: int = Field(description="VRAM it holds on this GPU, MiB.")


class InventoryGpuResponse(BaseModel):
    """One GPU as the scheduler sees it: its VRAM, how much of it jobs and endpoints hold,
    and how much was measured in use."""

    index: int
    vendor: str
    model: str
    vram_mb: int
    held_mb: int = Field(description="VRAM held by allocated or running jobs and endpoints.")
    free_mb: int = Field(description="vram_mb - held_mb (never negative).")
    used_mb: int | None = Field(
        default=None,
        description=(
            "VRAM measured in use (the node's last heartbeat, or NVML on the gateway's "
            "machine), MiB; None: not measured (AMD, declared or simulated GPUs)."
        ),
    )
    schedulable: bool = Field(description="False: cordoned, takes no new work.")
    simulated: bool = Field(description="No real device: a declared stand-in.")
    allocations: list[InventoryAllocationResponse] = Field(
        default_factory=list,
        description="What holds the VRAM, largest first (empty where the caller may not see it).",
    )


class InventoryNodeResponse(BaseModel):
    """One node of the inventory: ready or not, its CPU and memory, and its GPUs."""

    name: str
    ready: bool
    gpus: list[InventoryGpuResponse]
    cpu_millis: int | None = Field(
        default=None, description="The node's CPU, thousandths of a core; None: not declared."
    )
    cpu_held_millis: int = Field(
        default=0, description="CPU the allocations on the node hold, thousandths of a core."
    )
    cpu_free_millis: int | None = Field(
        default=None, description="cpu_millis - cpu_held_millis (never negative); None: no limit."
    )
    memory_mb: int | None = Field(
        default=None, description="The node's memory, MiB; None: not declared."
    )
    memory_held_mb: int = Field(default=0, description="Memory the allocations hold, MiB.")
    memory_free_mb: int | None = Field(
        default=None, description="memory_mb - memory_held_mb (never negative); None: no limit."
    )


class InventoryResponse(BaseModel):
    """Every node and GPU the scheduler places on, with the VRAM held on each."""

    nodes: list[InventoryNodeResponse]
