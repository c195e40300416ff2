"""metering_service's wire models: the bodies it validates and answers, shared with clients."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, Field

from gridweave_clients.credit.models import Amount, Reference
from gridweave_clients.fields import (
    MAX_REPLICAS,
    EndpointId,
    PrintableId,
    RequestBody,
    UserId,
    UtcDatetime,
)
from gridweave_controller.vendors import GpuVendor, Vendor

__all__ = [
    "MAX_GPU_COUNT",
    "MAX_WALL_SECONDS",
    "AuthorizeHoldRequest",
    "EndpointPeriodHoldRequest",
    "NodeName",
    "RecordUsageRequest",
    "ReleaseHoldRequest",
    "SettlementResponse",
    "SubjectId",
    "UsagePageResponse",
    "UsageRecordResponse",
    "UsageTotalsResponse",
]

# A year and a day: no single job or endpoint run is billed for longer in one record.
MAX_WALL_SECONDS = 366 * 24 * 3600
# The most GPUs one usage record bills (one node's).
MAX_GPU_COUNT = 64

SubjectId = Annotated[
    PrintableId, Field(description="A job or endpoint id, or a credit hold reference.")
]
NodeName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=253,
        pattern=r"^[\x21-\x7e]+$",
        description="The node the GPUs are on (printable ASCII, no spaces).",
    ),
]


class RecordUsageRequest(RequestBody):
    """The usage of a finished job (``job_id``) or endpoint run (``endpoint_id``): one of them."""

    job_id: SubjectId | None = None
    endpoint_id: SubjectId | None = None
    hold_reference: SubjectId | None = Field(
        default=None,
        description=(
            "The reference the credit hold was placed with: a job's is always its job id (and "
            "may be left out); an endpoint run must give its own (each run has its own hold)."
        ),
    )
    user_id: UserId
    owner_id: UserId | None = Field(
        default=None, description="The account billed; defaults to user_id."
    )
    node: NodeName
    gpu_indices: list[Annotated[int, Field(strict=True, ge=0, le=255)]] = Field(
        min_length=1, max_length=MAX_GPU_COUNT, description="GPU indices on the node; one per GPU."
    )
    vram_mb: int = Field(strict=True, gt=0, le=16_777_216, description="VRAM per GPU, MiB.")
    vendor: GpuVendor = Field(description="The GPUs' maker, priced by the price table.")
    gpu_count: int = Field(strict=True, ge=1, le=MAX_GPU_COUNT)
    # strict, like the amounts: a JSON number only (an integer is one), never "5" or true
    wall_seconds: float = Field(
        strict=True,
        ge=0,
        le=MAX_WALL_SECONDS,
        allow_inf_nan=False,
        description="Running time, seconds.",
    )
    started_at: UtcDatetime | None = Field(
        default=None, description="When it started running (any offset; kept in UTC)."
    )
    finished_at: UtcDatetime | None = Field(
        default=None, description="When it stopped running; defaults to the time of recording."
    )
    gpu_model: (
        Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[\x20-\x7e]+$")] | None
    ) = Field(default=None, description="The GPU model the node reported (goes on the receipt).")
    result_ref: (
        Annotated[str, Field(min_length=1, max_length=2048, pattern=r"^[\x21-\x7e]+$")] | None
    ) = Field(
        default=None,
        description="The result's reference; the receipt carries its SHA-256, not the reference.",
    )


class SettlementResponse(BaseModel):
    """The settlement of a record's hold with credit_service.

    ``state``: ``pending`` (not settled yet: replay the usage record to finish it),
    ``settled`` (``charged`` was captured from hold ``hold_id``), or ``refused``
    (credit_service said no: ``error_code`` and ``error`` say why).
    """

    state: str
    amount: int
    charged: int | None
    hold_id: int | None
    attempts: int
    error_code: str | None
    error: str | None
    settled_at: datetime | None


class UsageRecordResponse(BaseModel):
    """A usage record; money in micro-credits."""

    id: int
    kind: str
    job_id: str | None
    endpoint_id: str | None
    hold_reference: str
    user_id: str
    owner_id: str
    node: str
    gpu_indices: list[int]
    vendor: str
    vram_mb: int
    gpu_count: int
    wall_seconds: float
    billed_seconds: int
    price_per_gpu_second: int
    cost: int
    started_at: datetime | None
    finished_at: datetime
    created_at: datetime
    settlement: SettlementResponse


class UsageTotalsResponse(BaseModel):
    """Sums over every record of the period (not only the page)."""

    records: int
    billed_seconds: int
    gpu_seconds: int
    cost: int
    charged: int


class UsagePageResponse(BaseModel):
    """A user's records of a period, newest first, and the period's totals."""

    user_id: str
    period_from: datetime | None
    period_to: datetime | None
    totals: UsageTotalsResponse
    records: list[UsageRecordResponse]
    next_before_id: int | None


class AuthorizeHoldRequest(RequestBody):
    """Set ``amount`` aside on ``user_id``'s account for what ``reference`` names (a job id,
    an endpoint's billing period): one hold per reference, so a repeat replays the first."""

    user_id: UserId
    reference: Reference
    amount: Amount


class EndpointPeriodHoldRequest(RequestBody):
    """Hold one billing period of an endpoint's run, priced by metering: ``period_seconds``
    x ``max_replicas`` x ``gpu_count`` at ``vendor``'s price for ``vram_mb`` (for ``any``:
    the dearest). Its reference is the period key (``endpoint_periods.period_key``), so a
    repeat replays the first hold."""

    endpoint_id: EndpointId
    owner_id: UserId = Field(description="Whose credits pay: the endpoint's billing owner.")
    run_started_at: UtcDatetime = Field(description="When the run began (Running).")
    period: int = Field(strict=True, ge=0, le=MAX_WALL_SECONDS)
    period_seconds: int = Field(strict=True, ge=1, le=24 * 3600)
    vendor: Vendor
    vram_mb: int = Field(strict=True, ge=1, le=16 * 1024 * 1024)
    gpu_count: int = Field(strict=True, ge=1, le=MAX_GPU_COUNT)
    max_replicas: int = Field(strict=True, ge=1, le=MAX_REPLICAS)


class ReleaseHoldRequest(RequestBody):
    """Give back the whole hold of ``reference`` (on ``user_id``'s account), once: it is
    settled for 0, so a reference already settled keeps its settlement."""

    user_id: UserId
    reference: Reference
