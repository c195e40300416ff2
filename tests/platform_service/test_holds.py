"""The hold a submission places: metering's price x timeout x GPUs (pure, no server)."""

from __future__ import annotations

import pytest

from gridweave_clients.metering.pricing import DEFAULT_PRICE_TABLE, PriceTable
from gridweave_runtime.errors import InvalidRequest
from platform_service.services.holds import hold_amount

#: NVIDIA priced up to 24 GiB only; AMD free.
TABLE = PriceTable.model_validate(
    {
        "nvidia": [{"max_vram_mb": 24_576, "micro_credits_per_gpu_second": 170}],
        "amd": [{"max_vram_mb": None, "micro_credits_per_gpu_second": 0}],
    }
)


def _hold(table: PriceTable, vendor: str, vram_mb: int, gpus: int = 1, timeout: int = 10) -> int:
    return hold_amount(
        table, vendor=vendor, vram_mb=vram_mb, gpu_count=gpus, timeout_seconds=timeout
    )


def test_price_times_timeout_times_gpus() -> None:
    assert _hold(DEFAULT_PRICE_TABLE, "nvidia", 16_384, gpus=4, timeout=600) == 110 * 600 * 4


def test_any_vendor_holds_the_dearest_price_that_fits() -> None:
    assert _hold(DEFAULT_PRICE_TABLE, "any", 8_192) == 90 * 10  # AMD 90 > NVIDIA 60
    assert _hold(TABLE, "any", 16_000) == 170 * 10
    assert _hold(TABLE, "any", 40_000) == 1  # only AMD can price it, for free: 1 still held


def test_vram_beyond_every_tier_names_vram_mb() -> None:
    with pytest.raises(InvalidRequest) as refused:
        _hold(TABLE, "nvidia", 40_000)
    assert refused.value.fields[0]["field"] == "vram_mb"
    assert "24576" in refused.value.fields[0]["message"]


def test_a_vendor_without_prices_names_vendor() -> None:
    nvidia_only = PriceTable.model_validate(
        {"nvidia": [{"max_vram_mb": None, "micro_credits_per_gpu_second": 1}]}
    )
    with pytest.raises(InvalidRequest) as refused:
        _hold(nvidia_only, "amd", 1_024)
    assert refused.value.fields[0]["field"] == "vendor"
