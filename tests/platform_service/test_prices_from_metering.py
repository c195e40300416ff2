"""The platform prices by metering's table, read from metering: it has none of its own.

A metering billing by a table of its own (NVIDIA at 7 micro-credits per GPU-second up to
10,000 MiB), the real credit_service, and a platform that was given no table: a job's hold
and an endpoint's first holds are sized by metering's table (the 402 names them), a VRAM
that table does not price is the 422 naming ``vram_mb``, and with metering gone before the
platform ever read a table, a submission is a 503 and nothing is held.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gridweave_clients.metering.endpoint_periods import ENDPOINT_FIRST_HOLDS
from gridweave_clients.metering.pricing import PriceTable
from tests.job_gateway.gateway_factories import GatewayServer
from tests.metering_service.factories import metering_settings, running_metering
from tests.platform_service.factories import (
    NOWHERE,
    PlatformServer,
    platform_settings,
    running_platform,
    submit_body,
)
from tests.support.credit_server import CreditServer
from tests.support.postgres import PostgresTestServer

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

PRICE = 7
TABLE = PriceTable.model_validate(
    {"nvidia": [{"max_vram_mb": 10_000, "micro_credits_per_gpu_second": PRICE}]}
)


@pytest.fixture(scope="module")
def metering(
    postgres: PostgresTestServer, credit: CreditServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[httpx.Client]:
    with postgres.database("gwmeteringprices") as url:
        settings = metering_settings(
            url, credit.url, state_dir=tmp_path_factory.mktemp("metering"), price_table=TABLE
        )
        with running_metering(settings) as client:
            yield client


@pytest.fixture(scope="module")
def platform(
    platform_database: str,
    credit: CreditServer,
    metering: httpx.Client,
    gateway: GatewayServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[PlatformServer]:
    """The platform on metering's table; the gateway (on the same metering) answers the
    deploy's look-up of an earlier endpoint of the name."""
    settings = platform_settings(
        platform_database,
        tmp_path_factory.mktemp("platform"),
        credit_service_url=credit.url,
        gateway_url=gateway.url,
        metering_service_url=str(metering.base_url),
    )
    with running_platform(settings) as server:
        yield server


def test_a_jobs_hold_is_metering_price(platform: PlatformServer) -> None:
    user = platform.new_user()  # no credits: the 402 names what the hold needed
    body = submit_body(vendor="nvidia", vram_mb=8_192, gpu_count=2, timeout_seconds=100)
    refused = platform.http.post("/v1/jobs", json=body, headers=user.headers)
    assert refused.status_code == 402, refused.text
    assert refused.json()["error"]["needed"] == PRICE * 100 * 2


def test_a_vram_metering_does_not_price_names_vram_mb(platform: PlatformServer) -> None:
    user = platform.new_user()
    body = submit_body(vendor="nvidia", vram_mb=20_000)  # the default table would price it
    refused = platform.http.post("/v1/jobs", json=body, headers=user.headers)
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"]["fields"][0]["field"] == "vram_mb"
    vendor = platform.http.post("/v1/jobs", json=submit_body(vendor="amd"), headers=user.headers)
    assert vendor.status_code == 422, vendor.text  # no AMD in metering's table
    assert vendor.json()["error"]["fields"][0]["field"] == "vendor"


def test_an_endpoints_first_holds_are_metering_price(platform: PlatformServer) -> None:
    user = platform.new_user()
    body = {
        "name": "priced",
        "mode": "transformers",
        "model_ref": "/models/tiny-gpt2",
        "vram_mb": 8_192,
        "vendor": "nvidia",
        "max_replicas": 3,
    }
    refused = platform.http.post("/v1/endpoints", json=body, headers=user.headers)
    assert refused.status_code == 402, refused.text
    period = 60  # ENDPOINT_BILLING_SECONDS's default
    assert refused.json()["error"]["needed"] == PRICE * period * 3 * ENDPOINT_FIRST_HOLDS


def test_without_metering_a_submission_is_a_503_and_holds_nothing(
    platform_database: str, credit: CreditServer, tmp_path: Path
) -> None:
    settings = platform_settings(
        platform_database, tmp_path, credit_service_url=credit.url, metering_service_url=NOWHERE
    )
    with running_platform(settings) as platform:
        user = platform.new_user()
        credit.fund(user.user_id, 10**9)
        refused = platform.http.post("/v1/jobs", json=submit_body(), headers=user.headers)
        assert refused.status_code == 503, refused.text
        assert "metering_service" in refused.json()["error"]["message"]
        assert credit.account(user.user_id)["held"] == 0
