"""Metering's door to credit holds on the real credit_service: a job's authorized amount,
an endpoint period held at metering's own price, the open endpoint holds listed, and a
release; each refusal with its figures or the field it names."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import httpx
import pytest

from gridweave_clients.metering.endpoint_periods import endpoint_hold_amount, period_key
from gridweave_clients.metering.pricing import DEFAULT_PRICE_TABLE
from tests.support.credit_server import CreditServer

pytestmark = [pytest.mark.postgres]

STARTED = "2026-01-05T12:00:00.250000Z"
GATEWAY = {"X-Gridweave-Role": "gateway"}
PLATFORM = {"X-Gridweave-Role": "platform"}


def funded(credit: CreditServer, amount: int = 10_000_000) -> str:
    owner = f"owner-{uuid.uuid4().hex[:8]}"
    credit.fund(owner, amount)
    return owner


def period(owner: str, endpoint_id: str, index: int = 0, **overrides: Any) -> dict[str, Any]:
    return {
        "endpoint_id": endpoint_id,
        "owner_id": owner,
        "run_started_at": STARTED,
        "period": index,
        "period_seconds": 60,
        "vendor": "nvidia",
        "vram_mb": 16_384,
        "gpu_count": 2,
        "max_replicas": 3,
        **overrides,
    }


def amount_of(**fields: Any) -> int:
    return endpoint_hold_amount(
        DEFAULT_PRICE_TABLE,
        vendor=fields.get("vendor", "nvidia"),
        vram_mb=fields.get("vram_mb", 16_384),
        gpu_count=2,
        max_replicas=3,
        period_seconds=60,
    )


class TestEndpointPeriodHolds:
    def test_metering_prices_the_period_and_names_it_by_its_key(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        owner, endpoint_id = funded(credit), f"ep-{uuid.uuid4().hex[:8]}"
        answer = metering.post(
            "/v1/endpoint-holds", json=period(owner, endpoint_id), headers=GATEWAY
        )
        assert answer.status_code == 200, answer.text
        hold = answer.json()
        assert hold["amount"] == amount_of() == 110 * 60 * 2 * 3
        started = datetime.fromisoformat(STARTED)
        assert hold["reference"] == period_key(endpoint_id, started, 0)
        assert credit.account(owner)["held"] == hold["amount"]
        again = metering.post(
            "/v1/endpoint-holds", json=period(owner, endpoint_id), headers=GATEWAY
        )
        assert again.json()["hold_id"] == hold["hold_id"]  # replayed, held once
        assert credit.account(owner)["held"] == hold["amount"]

    def test_any_vendor_is_held_at_the_dearest_price(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        owner = funded(credit)
        body = period(owner, f"ep-{uuid.uuid4().hex[:8]}", vendor="any", vram_mb=8_192)
        answer = metering.post("/v1/endpoint-holds", json=body, headers=GATEWAY)
        assert answer.status_code == 200, answer.text
        assert (
            answer.json()["amount"]
            == amount_of(vendor="amd", vram_mb=8_192)
            > amount_of(vendor="nvidia", vram_mb=8_192)
        )

    def test_an_owner_who_cannot_pay_gets_402_with_the_figures(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        owner = funded(credit, amount_of() - 1)
        body = period(owner, f"ep-{uuid.uuid4().hex[:8]}")
        answer = metering.post("/v1/endpoint-holds", json=body, headers=GATEWAY)
        assert answer.status_code == 402, answer.text
        error = answer.json()["error"]
        assert (error["available"], error["needed"]) == (amount_of() - 1, amount_of())
        assert credit.account(owner)["held"] == 0

    def test_a_period_past_the_spending_cap_names_the_cap(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        owner = funded(credit)
        credit.cap_spending(owner, monthly_cap=amount_of() - 1)
        body = period(owner, f"ep-{uuid.uuid4().hex[:8]}")
        answer = metering.post("/v1/endpoint-holds", json=body, headers=GATEWAY)
        assert answer.status_code == 402, answer.text
        error = answer.json()["error"]
        assert (error["code"], error["cap"], error["asked"]) == (
            "spending_limit",
            "monthly",
            amount_of(),
        )

    @pytest.mark.parametrize(
        ("override", "field"),
        [
            ({"vram_mb": 0}, "vram_mb"),
            ({"vendor": "intel"}, "vendor"),
            ({"period": -1}, "period"),
            ({"max_replicas": 0}, "max_replicas"),
            ({"run_started_at": "yesterday"}, "run_started_at"),
        ],
    )
    def test_a_field_that_cannot_be_priced_is_422_naming_it(
        self, metering: httpx.Client, credit: CreditServer, override: dict[str, Any], field: str
    ) -> None:
        owner = funded(credit)
        body = period(owner, f"ep-{uuid.uuid4().hex[:8]}", **override)
        answer = metering.post("/v1/endpoint-holds", json=body, headers=GATEWAY)
        assert answer.status_code == 422, answer.text
        assert field in {item["field"] for item in answer.json()["error"]["fields"]}
        assert credit.account(owner)["held"] == 0

    def test_only_the_gateway_asks_for_periods(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        owner = funded(credit)
        body = period(owner, f"ep-{uuid.uuid4().hex[:8]}")
        assert metering.post("/v1/endpoint-holds", json=body, headers=PLATFORM).status_code == 403
        assert metering.get("/v1/endpoint-holds", headers=PLATFORM).status_code == 403
        assert credit.account(owner)["held"] == 0


class TestListAndRelease:
    def test_open_endpoint_holds_are_listed_until_released(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        owner, endpoint_id = funded(credit), f"ep-{uuid.uuid4().hex[:8]}"
        credit.place_hold(owner, 5, f"job-{uuid.uuid4().hex[:8]}")  # not an endpoint's
        references = []
        for index in range(3):
            body = period(owner, endpoint_id, index)
            answer = metering.post("/v1/endpoint-holds", json=body, headers=GATEWAY)
            references.append(answer.json()["reference"])
        listed = self.listed(metering, owner)
        assert listed == references
        release = {"user_id": owner, "reference": references[1]}
        answer = metering.post("/v1/releases", json=release, headers=GATEWAY)
        assert answer.status_code == 200, answer.text
        assert self.listed(metering, owner) == [references[0], references[2]]
        assert credit.account(owner)["held"] == 2 * amount_of() + 5

    @staticmethod
    def listed(metering: httpx.Client, owner: str) -> list[str]:
        """The owner's open endpoint holds, read page by page (two at a time)."""
        found: list[str] = []
        after: int | None = None
        while True:
            params: dict[str, Any] = {"limit": 2}
            if after is not None:
                params["after_id"] = after
            answer = metering.get("/v1/endpoint-holds", params=params, headers=GATEWAY)
            assert answer.status_code == 200, answer.text
            page = answer.json()
            found += [h["reference"] for h in page["holds"] if h["user_id"] == owner]
            assert all(h["reference"].startswith("ep:") for h in page["holds"])
            after = page["next_after_id"]
            if after is None:
                return found
