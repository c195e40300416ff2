"""The price table: integer micro-credits per GPU-second, by vendor and VRAM tier.

A vendor maps to tiers in ascending ``max_vram_mb``; a usage record is priced by the first
tier whose ``max_vram_mb`` is at least its VRAM per GPU. The last tier may leave
``max_vram_mb`` unset to cover everything above. Pure code: no database, no HTTP.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, RootModel, model_validator

from gridweave_clients.credit.models import MAX_AMOUNT
from gridweave_clients.metering.models import MAX_GPU_COUNT, MAX_WALL_SECONDS
from gridweave_controller.vendors import GpuVendor

__all__ = [
    "DEFAULT_PRICE_TABLE",
    "MAX_GPU_COUNT",
    "MAX_PRICE_PER_GPU_SECOND",
    "MAX_WALL_SECONDS",
    "PriceTable",
    "PriceTier",
    "UnknownVendor",
    "Unpriced",
    "VramBeyondPriceTable",
    "price_per_gpu_second",
]

# The highest price at which the largest record (MAX_WALL_SECONDS on MAX_GPU_COUNT GPUs)
# still costs no more than the largest amount credit_service settles: 494,111 micro-credits
# (about half a credit) per GPU-second, far above any real price. Above it such a record's
# settlement would be refused for ever.
MAX_PRICE_PER_GPU_SECOND = MAX_AMOUNT // (MAX_WALL_SECONDS * MAX_GPU_COUNT)


class PriceTier(BaseModel):
    """Up to ``max_vram_mb`` of VRAM per GPU (unset: no limit), this price per GPU-second."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_vram_mb: int | None = Field(default=None, gt=0)
    micro_credits_per_gpu_second: int = Field(strict=True, ge=0, le=MAX_PRICE_PER_GPU_SECOND)


class PriceTable(RootModel[dict[GpuVendor, tuple[PriceTier, ...]]]):
    """Vendor -> tiers in ascending ``max_vram_mb``; only the last tier may be unbounded."""

    model_config = ConfigDict(frozen=True)

    @model_validator(mode="after")
    def _tiers_ascend(self) -> PriceTable:
        if not self.root:
            raise ValueError("the price table needs at least one vendor")
        for vendor, tiers in self.root.items():
            if not tiers:
                raise ValueError(f"vendor {vendor!r} has no price tier")
            bounds = [tier.max_vram_mb for tier in tiers]
            if any(bound is None for bound in bounds[:-1]):
                raise ValueError(f"vendor {vendor!r}: only the last tier may omit max_vram_mb")
            limited = [bound for bound in bounds if bound is not None]
            if limited != sorted(set(limited)):
                raise ValueError(f"vendor {vendor!r}: max_vram_mb must strictly ascend")
        return self


class Unpriced(ValueError):
    """The price table prices no GPU-second of what was asked; ``field``: the request field
    it cannot price (a service answers 422 naming it)."""

    field = ""


class UnknownVendor(Unpriced):
    """The vendor has no entry in the price table."""

    field = "vendor"


class VramBeyondPriceTable(Unpriced):
    """The VRAM per GPU is above the vendor's largest bounded tier and no tier is unbounded."""

    field = "vram_mb"


def price_per_gpu_second(table: PriceTable, *, vendor: str, vram_mb: int) -> int:
    """The price of one GPU-second of ``vendor`` with ``vram_mb`` per GPU, in micro-credits."""
    tiers = next((tiers for name, tiers in table.root.items() if name == vendor), None)
    if tiers is None:
        raise UnknownVendor(
            f"no price for vendor {vendor!r}; known: {', '.join(sorted(table.root))}"
        )
    for tier in tiers:
        if tier.max_vram_mb is None or vram_mb <= tier.max_vram_mb:
            return tier.micro_credits_per_gpu_second
    raise VramBeyondPriceTable(
        f"{vram_mb} MiB per GPU is above the largest {vendor} tier ({tiers[-1].max_vram_mb} MiB)"
    )


def _tiers(*pairs: tuple[int | None, int]) -> tuple[PriceTier, ...]:
    return tuple(
        PriceTier(max_vram_mb=bound, micro_credits_per_gpu_second=price) for bound, price in pairs
    )


# Micro-credits per GPU-second (1 credit = 1,000,000 micro-credits), by VRAM per GPU in MiB.
# e.g. an NVIDIA slice of up to 24 GiB costs 170 per second: 0.612 credits per GPU-hour.
DEFAULT_PRICE_TABLE = PriceTable(
    {
        "nvidia": _tiers(
            (8_192, 60), (16_384, 110), (24_576, 170), (49_152, 330), (81_920, 560), (None, 780)
        ),
        "amd": _tiers((16_384, 90), (32_768, 150), (65_536, 300), (None, 500)),
    }
)
