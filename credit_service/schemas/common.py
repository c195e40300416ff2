"""Field types shared by the request bodies."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["MAX_AMOUNT", "Amount", "IdempotencyKey", "Reference", "RequestBody", "UserId"]

# 10^15 micro-credits = 10^9 credits: far above any real balance, far below BIGINT's limit,
# so no sum of accepted amounts can overflow.
MAX_AMOUNT = 10**15

UserId = Annotated[
    str,
    Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._@:+-]*$"),
]
Amount = Annotated[
    int, Field(strict=True, gt=0, le=MAX_AMOUNT, description="Micro-credits (an integer).")
]
IdempotencyKey = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        pattern=r"^[\x21-\x7e]+$",
        description="Makes a retry safe: the same key replays the first answer.",
    ),
]
Reference = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        pattern=r"^[\x21-\x7e]+$",
        description="What the hold pays for, e.g. a job id; settles it exactly once.",
    ),
]


class RequestBody(BaseModel):
    """Base of request bodies: unknown fields are refused, so a typo is a 422, not ignored."""

    model_config = ConfigDict(extra="forbid")
