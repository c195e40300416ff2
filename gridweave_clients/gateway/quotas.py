"""Per-user quotas and fair-share weights as the gateway receives them.

An admin sets them on the platform, which stores them; a quota travels with each
submission it limits (``SubmitJobRequest.quota``, ``CreateEndpointRequest.quota``), and the
weights are pushed to the gateway whole (``PUT /v1/shares``) after every change and on a
timer, so a restarted gateway has them again within one period.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field, validate_call

from gridweave_clients._core import Operation, model_operation
from gridweave_clients.fields import RequestBody, UserId

__all__ = [
    "MAX_QUOTA_GPUS",
    "MAX_QUOTA_VRAM_MB",
    "MAX_SHARE_WEIGHT",
    "MAX_SHARES",
    "QuotaGpus",
    "QuotaVramMb",
    "ShareWeight",
    "SharesRequest",
    "SharesResponse",
    "UserQuotaModel",
    "get_shares",
    "set_shares",
]

#: The largest GPU quota an admin may set.
MAX_QUOTA_GPUS = 100_000
#: The largest VRAM quota an admin may set, MiB (1 EiB).
MAX_QUOTA_VRAM_MB = 2**40
#: The largest share weight (the smallest is above 0).
MAX_SHARE_WEIGHT = 1000.0
#: The most users one push of weights may name.
MAX_SHARES = 100_000

QuotaGpus = Annotated[int, Field(strict=True, ge=0, le=MAX_QUOTA_GPUS)]
QuotaVramMb = Annotated[int, Field(strict=True, ge=0, le=MAX_QUOTA_VRAM_MB)]
ShareWeight = Annotated[float, Field(gt=0, le=MAX_SHARE_WEIGHT, allow_inf_nan=False)]


class UserQuotaModel(RequestBody):
    """What one user may hold at once: GPUs and VRAM (MiB) over its unfinished jobs and
    deployed endpoints; None: no limit."""

    max_gpus: QuotaGpus | None = None
    max_vram_mb: QuotaVramMb | None = None


class SharesRequest(RequestBody):
    """Every user's fair-share weight that is not 1 (a user not named weighs 1)."""

    weights: dict[UserId, ShareWeight] = Field(default_factory=dict, max_length=MAX_SHARES)


class SharesResponse(BaseModel):
    """The weights the scheduler orders users by now (a user not named weighs 1)."""

    weights: dict[str, float]


@validate_call
def set_shares(request: SharesRequest) -> Operation[SharesResponse]:
    """Replace every user's weight in the fair share from the next scheduling pass on."""
    return model_operation("PUT", "/v1/shares", SharesResponse, body=request)


def get_shares() -> Operation[SharesResponse]:
    """The weights the scheduler uses now."""
    return model_operation("GET", "/v1/shares", SharesResponse)
