"""Request bodies of ``/v1/crd``: camelCase on the wire, the controller's parameters inside.

Value rules (DNS-1123 names, label values, phase moves) belong to the controller library and
are checked there, so the direct and the proxied transports refuse exactly the same input;
these models check only the JSON shape and refuse unknown fields.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from gridweave_controller.client import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_SECONDS

__all__ = [
    "CompleteJobRequest",
    "CreateEndpointRequest",
    "CreateJobRequest",
    "EndpointHealthRequest",
    "EndpointOutcomeRequest",
    "EndpointRunningRequest",
    "FailJobRequest",
    "FinishJobRequest",
    "PlacementRequest",
    "RequeueJobRequest",
]

Vendor = Literal["nvidia", "amd", "any"]


class _Body(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        allow_inf_nan=True,  # the controller refuses non-finite numbers, naming the parameter
        strict=True,
    )


class CreateJobRequest(_Body):
    """``POST /v1/crd/jobs``."""

    job_id: str
    user_id: str
    function_ref: str
    vram_mb: int
    gpu_count: int = 1
    vendor: Vendor = "any"
    owner: str | None = None
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS
    max_retries: int = DEFAULT_MAX_RETRIES
    labels: dict[str, str] | None = None


class PlacementRequest(_Body):
    """A node and the GPU indices on it (job allocated, endpoint deploying)."""

    node: str
    gpu_indices: list[int]


class CompleteJobRequest(_Body):
    """``POST /v1/crd/jobs/{id}/completed``."""

    wall_seconds: float
    result_ref: str | None = None


class FailJobRequest(_Body):
    """``POST /v1/crd/jobs/{id}/failed``."""

    reason: str
    message: str = ""
    wall_seconds: float | None = None


class FinishJobRequest(_Body):
    """``POST /v1/crd/jobs/{id}/cancelled`` and ``/timed-out``."""

    message: str = ""
    wall_seconds: float | None = None


class RequeueJobRequest(_Body):
    """``POST /v1/crd/jobs/{id}/pending``."""

    reason: str
    message: str = ""


class CreateEndpointRequest(_Body):
    """``POST /v1/crd/endpoints``."""

    endpoint_id: str
    user_id: str
    vram_mb: int
    model: str | None = None
    image: str | None = None
    mode: Literal["vllm", "custom"] | None = None
    gpu_count: int = 1
    vendor: Vendor = "any"
    replicas: int = 1
    micro_credits_per_second: int = 0
    micro_credits_per_request: int = 0
    labels: dict[str, str] | None = None


class EndpointRunningRequest(_Body):
    """``POST /v1/crd/endpoints/{id}/running``."""

    url: str


class EndpointOutcomeRequest(_Body):
    """``POST /v1/crd/endpoints/{id}/stopped`` and ``/failed``."""

    reason: str
    message: str = ""


class EndpointHealthRequest(_Body):
    """``POST /v1/crd/endpoints/{id}/health``."""

    healthy: bool
    message: str = ""
    ready_replicas: int | None = None
