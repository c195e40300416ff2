"""``GET /v1/prices``: the table metering bills by, read by the platform and the gateway
(``MeteringPrices``) instead of a table of their own.

The reader is tested against real metering services on one port: a table read is kept
until it is a minute old, then read again; a metering that does not answer leaves the last
table standing; with none read yet, its failure is raised, and raised again for 5 s
without asking metering.
"""

from __future__ import annotations

import asyncio
from contextlib import AbstractContextManager
from pathlib import Path

import httpx
import pytest

from gridweave_clients.errors import ServiceUnavailable
from gridweave_clients.metering import AsyncMeteringClient
from gridweave_clients.metering.price_source import MeteringPrices
from gridweave_clients.metering.pricing import DEFAULT_PRICE_TABLE, PriceTable
from tests.metering_service.factories import metering_settings, running_metering
from tests.support.credit_server import INTERNAL_TOKEN, CreditServer
from tests.support.http_server import free_ports

TABLE_A = PriceTable.model_validate(
    {"nvidia": [{"max_vram_mb": 10_000, "micro_credits_per_gpu_second": 7}]}
)
TABLE_B = PriceTable.model_validate(
    {"amd": [{"max_vram_mb": None, "micro_credits_per_gpu_second": 11}]}
)


class TestRoute:
    @pytest.mark.parametrize("role", ["platform", "gateway"])
    def test_the_platform_and_the_gateway_read_the_table(
        self, metering: httpx.Client, role: str
    ) -> None:
        answer = metering.get("/v1/prices", headers={"X-Gridweave-Role": role})
        assert answer.status_code == 200, answer.text
        assert PriceTable.model_validate(answer.json()) == DEFAULT_PRICE_TABLE

    def test_other_roles_and_no_credential_are_refused(self, metering: httpx.Client) -> None:
        assert metering.get("/v1/prices", headers={"X-Gridweave-Role": "faucet"}).status_code == 403
        anonymous = httpx.get(f"{metering.base_url}/v1/prices")
        assert anonymous.status_code == 401


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_a_table_is_kept_a_minute_then_read_again_and_outlives_its_metering(
    metering_database: str, credit: CreditServer, tmp_path: Path
) -> None:
    (port,) = free_ports(1)

    def serving(table: PriceTable, state: str) -> AbstractContextManager[httpx.Client]:
        settings = metering_settings(
            metering_database,
            credit.url,
            state_dir=tmp_path / state,
            price_table=table,
        )
        return running_metering(settings, port=port)

    async def scenario() -> None:
        clock = Clock()
        client = AsyncMeteringClient(
            f"http://127.0.0.1:{port}",
            INTERNAL_TOKEN,
            role="platform",
            timeout=5.0,
        )
        prices = MeteringPrices(client, max_age_seconds=60, clock=clock)
        never_read = MeteringPrices(client, max_age_seconds=60, clock=clock)
        try:
            assert prices.last() is None
            with serving(TABLE_A, "a"):
                assert await prices.table() == TABLE_A
            with serving(TABLE_B, "b"):
                clock.now += 59
                assert await prices.table() == TABLE_A  # still fresh: not read again
                clock.now += 2
                assert await prices.table() == TABLE_B
            clock.now += 61  # metering gone: the last table stands
            assert await prices.table() == TABLE_B
            assert prices.last() == TABLE_B
            with pytest.raises(ServiceUnavailable) as first:
                await never_read.table()
            assert never_read.last() is None
            with serving(TABLE_A, "c"):
                clock.now += 4  # within 5 s of the failure: raised again, metering not asked
                with pytest.raises(ServiceUnavailable) as again:
                    await never_read.table()
                assert again.value is first.value
                clock.now += 2
                assert await never_read.table() == TABLE_A
        finally:
            await client.aclose()

    asyncio.run(scenario())
