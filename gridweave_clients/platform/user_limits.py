"""A user's quotas and fair-share weight, set by admins (``/v1/admin/users/{id}/limits``).

Quotas (``max_gpus``, ``max_vram_mb``) bound what the user's unfinished jobs, maps and
deployed endpoints hold at once: a submission past one is refused with 429
``quota_exceeded`` naming it. ``share_weight`` is the user's weight in the scheduler's fair
share when the cluster is full (a user of weight 2 is entitled to twice the share of one of
weight 1). None for any of them: no quota, weight 1.
"""

from __future__ import annotations

from urllib.parse import quote

from pydantic import BaseModel, Field, validate_call

from gridweave_clients._core import Operation, model_operation
from gridweave_clients.fields import RequestBody
from gridweave_clients.gateway.quotas import QuotaGpus, QuotaVramMb, ShareWeight
from gridweave_clients.platform.registry import UserId

__all__ = [
    "UserLimitsRequest",
    "UserLimitsResponse",
    "get_user_limits",
    "set_user_limits",
]


class UserLimitsRequest(RequestBody):
    """Every limit of a user, replaced whole: a field left out or null is cleared."""

    max_gpus: QuotaGpus | None = Field(
        default=None, description="GPUs held at once; none: no limit."
    )
    max_vram_mb: QuotaVramMb | None = Field(
        default=None, description="VRAM (MiB, over all GPUs) held at once; none: no limit."
    )
    share_weight: ShareWeight | None = Field(
        default=None, description="Weight in the fair share (above 0); none: 1."
    )


class UserLimitsResponse(BaseModel):
    """A user's limits as in force: null quotas are no limit; the weight is 1 unless set."""

    user_id: str
    max_gpus: int | None
    max_vram_mb: int | None
    share_weight: float
    share_weight_is_default: bool


def _path(user_id: str) -> str:
    return f"/v1/admin/users/{quote(user_id, safe='')}/limits"


@validate_call
def get_user_limits(user_id: UserId) -> Operation[UserLimitsResponse]:
    """A user's quotas and share weight (admins)."""
    return model_operation("GET", _path(user_id), UserLimitsResponse)


@validate_call
def set_user_limits(
    user_id: UserId,
    *,
    max_gpus: QuotaGpus | None = None,
    max_vram_mb: QuotaVramMb | None = None,
    share_weight: ShareWeight | None = None,
) -> Operation[UserLimitsResponse]:
    """Replace a user's quotas and share weight (None clears each; admins)."""
    body = UserLimitsRequest(max_gpus=max_gpus, max_vram_mb=max_vram_mb, share_weight=share_weight)
    return model_operation("PUT", _path(user_id), UserLimitsResponse, body=body, idempotent=True)
