"""The price table: tiers, the default, and a table set by the environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from gridweave_clients.credit.models import MAX_AMOUNT
from gridweave_clients.metering.pricing import (
    DEFAULT_PRICE_TABLE,
    MAX_GPU_COUNT,
    MAX_PRICE_PER_GPU_SECOND,
    MAX_WALL_SECONDS,
    PriceTable,
    UnknownVendor,
    VramBeyondPriceTable,
    price_per_gpu_second,
)
from metering_service.settings import MeteringSettings
from tests.metering_service.factories import (
    metering_settings,
    running_metering,
    unique,
    usage_body,
)
from tests.support.credit_server import CreditServer

CUSTOM_TABLE = {
    "nvidia": [
        {"max_vram_mb": 10_000, "micro_credits_per_gpu_second": 7},
        {"max_vram_mb": 20_000, "micro_credits_per_gpu_second": 13},
    ]
}


class TestPricePerGpuSecond:
    @pytest.mark.parametrize(
        ("vram_mb", "price"), [(1, 7), (10_000, 7), (10_001, 13), (20_000, 13)]
    )
    def test_picks_the_first_tier_that_fits(self, vram_mb: int, price: int) -> None:
        table = PriceTable.model_validate(CUSTOM_TABLE)

        assert price_per_gpu_second(table, vendor="nvidia", vram_mb=vram_mb) == price

    def test_above_the_last_bounded_tier_is_refused(self) -> None:
        table = PriceTable.model_validate(CUSTOM_TABLE)

        with pytest.raises(VramBeyondPriceTable):
            price_per_gpu_second(table, vendor="nvidia", vram_mb=20_001)

    def test_an_unknown_vendor_is_refused(self) -> None:
        with pytest.raises(UnknownVendor, match="known: amd, nvidia"):
            price_per_gpu_second(DEFAULT_PRICE_TABLE, vendor="intel", vram_mb=1)

    @pytest.mark.parametrize(
        "tiers",
        [
            [],
            [
                {"max_vram_mb": 2, "micro_credits_per_gpu_second": 1},
                {"max_vram_mb": 1, "micro_credits_per_gpu_second": 1},
            ],
            [
                {"micro_credits_per_gpu_second": 1},
                {"max_vram_mb": 1, "micro_credits_per_gpu_second": 1},
            ],
            [{"max_vram_mb": 1, "micro_credits_per_gpu_second": -1}],
            [{"max_vram_mb": 1, "micro_credits_per_gpu_second": 1.5}],
        ],
    )
    def test_a_malformed_table_is_refused(self, tiers: list[dict[str, object]]) -> None:
        with pytest.raises(ValidationError):
            PriceTable.model_validate({"nvidia": tiers})


class TestPriceTableSetting:
    def test_the_environment_replaces_the_default_table(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("METERING_PRICE_TABLE", json.dumps(CUSTOM_TABLE))

        settings = MeteringSettings()

        assert settings.price_table == PriceTable.model_validate(CUSTOM_TABLE)

    def test_a_service_bills_with_its_configured_table(
        self,
        metering_database: str,
        credit: CreditServer,
        tmp_path: Path,
    ) -> None:
        user_id, job_id = unique("user"), unique("job")
        credit.fund(user_id, 1_000_000)
        credit.place_hold(user_id, 100_000, reference=job_id)
        settings = metering_settings(
            metering_database,
            credit.url,
            state_dir=tmp_path,
            price_table=PriceTable.model_validate(CUSTOM_TABLE),
        )
        with running_metering(settings) as metering:
            billed = metering.post("/v1/usage", json=usage_body(job_id, user_id, vram_mb=12_000))
            too_big = metering.post(
                "/v1/usage", json=usage_body(unique("job"), user_id, vram_mb=30_000)
            )

        assert (billed.json()["price_per_gpu_second"], billed.json()["cost"]) == (13, 130)
        assert credit.account(user_id)["balance"] == 1_000_000 - 130
        assert too_big.status_code == 422
        assert too_big.json()["error"]["fields"][0]["field"] == "vram_mb"


class TestPriceLimit:
    def test_the_largest_record_at_the_highest_price_is_an_amount_credit_accepts(self) -> None:
        assert MAX_WALL_SECONDS * MAX_GPU_COUNT * MAX_PRICE_PER_GPU_SECOND <= MAX_AMOUNT

    def test_a_price_above_the_limit_is_refused(self) -> None:
        tier = {"max_vram_mb": None, "micro_credits_per_gpu_second": MAX_PRICE_PER_GPU_SECOND}

        PriceTable.model_validate({"nvidia": [tier]})
        with pytest.raises(ValidationError, match="micro_credits_per_gpu_second"):
            PriceTable.model_validate(
                {"nvidia": [{**tier, "micro_credits_per_gpu_second": MAX_PRICE_PER_GPU_SECOND + 1}]}
            )

    def test_the_largest_record_at_the_highest_price_settles(
        self, metering_database: str, credit: CreditServer, tmp_path: Path
    ) -> None:
        user_id, job_id = unique("user"), unique("job")
        credit.fund(user_id, MAX_AMOUNT)
        credit.place_hold(user_id, MAX_AMOUNT, reference=job_id)
        table = {"nvidia": [{"micro_credits_per_gpu_second": MAX_PRICE_PER_GPU_SECOND}]}
        settings = metering_settings(
            metering_database,
            credit.url,
            state_dir=tmp_path,
            price_table=PriceTable.model_validate(table),
        )
        body = usage_body(
            job_id,
            user_id,
            gpu_count=MAX_GPU_COUNT,
            gpu_indices=list(range(MAX_GPU_COUNT)),
            wall_seconds=MAX_WALL_SECONDS,
        )
        with running_metering(settings) as metering:
            record = metering.post("/v1/usage", json=body).json()

        cost = MAX_WALL_SECONDS * MAX_GPU_COUNT * MAX_PRICE_PER_GPU_SECOND
        assert record["cost"] == cost
        assert record["settlement"]["state"] == "settled", record["settlement"]
        assert record["settlement"]["charged"] == cost
        assert credit.account(user_id)["balance"] == MAX_AMOUNT - cost
