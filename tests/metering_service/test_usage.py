"""Recording usage: billing, pricing, settlement exactly once, replays and failures."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.metering_service.factories import unique, usage_body
from tests.support.credit_server import AUTH_HEADERS, CreditServer


def _funded_job(credit: CreditServer, *, hold: int = 1_000_000) -> tuple[str, str, int]:
    user_id, job_id = unique("user"), unique("job")
    credit.fund(user_id, 10_000_000)
    hold_id = credit.place_hold(user_id, hold, reference=job_id)
    return user_id, job_id, hold_id


class TestRecordUsage:
    def test_charges_billed_seconds_times_gpus_times_price(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        user_id, job_id, hold_id = _funded_job(credit)
        body = usage_body(job_id, user_id, wall_seconds=10.2, gpu_count=2, gpu_indices=[0, 3])

        response = metering.post("/v1/usage", json=body)

        assert response.status_code == 201, response.text
        record = response.json()
        assert record["billed_seconds"] == 11
        assert record["price_per_gpu_second"] == 170
        assert record["cost"] == 11 * 2 * 170
        assert record["settlement"]["state"] == "settled"
        assert record["settlement"]["charged"] == 3740
        assert record["settlement"]["hold_id"] == hold_id
        assert credit.account(user_id) == {
            "user_id": user_id,
            "balance": 10_000_000 - 3740,
            "held": 0,
            "available": 10_000_000 - 3740,
        }

    def test_rounds_running_time_up_to_whole_seconds(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        billed = {}
        for wall_seconds in (0, 0.001, 4.0, 4.5, 59.999):
            user_id, job_id, _ = _funded_job(credit)
            body = usage_body(job_id, user_id, wall_seconds=wall_seconds)
            billed[wall_seconds] = metering.post("/v1/usage", json=body).json()["billed_seconds"]

        assert billed == {0: 0, 0.001: 1, 4.0: 4, 4.5: 5, 59.999: 60}

    def test_zero_seconds_releases_the_whole_hold(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        user_id, job_id, hold_id = _funded_job(credit, hold=5_000)

        record = metering.post("/v1/usage", json=usage_body(job_id, user_id, wall_seconds=0)).json()

        assert record["cost"] == 0
        assert record["settlement"]["state"] == "settled"
        assert credit.hold(hold_id)["status"] == "released"
        assert credit.account(user_id)["balance"] == 10_000_000

    def test_prices_by_vendor_and_vram_tier(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        prices = {}
        for vendor, vram_mb in (
            ("nvidia", 8_192),
            ("nvidia", 8_193),
            ("nvidia", 200_000),
            ("amd", 16_384),
            ("amd", 65_537),
        ):
            user_id, job_id, _ = _funded_job(credit)
            body = usage_body(job_id, user_id, vendor=vendor, vram_mb=vram_mb)
            prices[vendor, vram_mb] = metering.post("/v1/usage", json=body).json()[
                "price_per_gpu_second"
            ]

        assert prices == {
            ("nvidia", 8_192): 60,
            ("nvidia", 8_193): 110,
            ("nvidia", 200_000): 780,
            ("amd", 16_384): 90,
            ("amd", 65_537): 500,
        }

    def test_bills_the_owner_account_when_given(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        owner_id, job_id, _ = _funded_job(credit)
        runner_id = unique("runner")

        record = metering.post(
            "/v1/usage", json=usage_body(job_id, runner_id, owner_id=owner_id)
        ).json()

        assert (record["user_id"], record["owner_id"]) == (runner_id, owner_id)
        assert credit.account(owner_id)["balance"] == 10_000_000 - 1700

    def test_an_endpoint_run_is_settled_by_its_hold_reference(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        user_id, run, hold_id = _funded_job(credit)
        endpoint_id = unique("endpoint")
        body = _endpoint_body(endpoint_id, user_id, hold_reference=run)

        record = metering.post("/v1/usage", json=body).json()

        assert (record["kind"], record["endpoint_id"], record["job_id"]) == (
            "endpoint",
            endpoint_id,
            None,
        )
        assert record["hold_reference"] == run
        assert record["settlement"]["hold_id"] == hold_id
        assert credit.hold(hold_id)["captured"] == 1700

    def test_an_endpoint_run_without_a_hold_reference_is_refused(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        user_id, endpoint_id, hold_id = _funded_job(credit)

        response = metering.post("/v1/usage", json=_endpoint_body(endpoint_id, user_id))

        assert response.status_code == 422, response.text
        assert response.json()["error"]["fields"] == [
            {
                "field": "hold_reference",
                "message": "an endpoint run needs the reference its credit hold was placed with",
            }
        ]
        assert credit.hold(hold_id)["status"] == "open"
        assert credit.ledger_amounts(user_id) == [10_000_000]

    def test_each_run_of_an_endpoint_settles_its_own_hold(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        user_id, endpoint_id = unique("user"), unique("endpoint")
        credit.fund(user_id, 10_000_000)
        runs = [f"{endpoint_id}/run-{run}" for run in (1, 2)]
        holds = [credit.place_hold(user_id, 100_000, reference=run) for run in runs]

        records = [
            metering.post(
                "/v1/usage", json=_endpoint_body(endpoint_id, user_id, hold_reference=run)
            )
            for run in runs
        ]
        replay = metering.post(
            "/v1/usage", json=_endpoint_body(endpoint_id, user_id, hold_reference=runs[0])
        )

        # the same figures twice, yet two runs: each is billed
        assert [r.status_code for r in records] == [201, 201]
        assert [r.json()["settlement"]["hold_id"] for r in records] == holds
        assert (replay.status_code, replay.json()["id"]) == (200, records[0].json()["id"])
        assert credit.ledger_amounts(user_id) == [-1700, -1700, 10_000_000]


def _endpoint_body(endpoint_id: str, user_id: str, **overrides: object) -> dict[str, object]:
    body = usage_body(endpoint_id, user_id, **overrides)
    del body["job_id"]
    return {**body, "endpoint_id": endpoint_id}


class TestExactlyOnce:
    def test_a_replay_returns_the_first_record_and_charges_nothing_more(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        user_id, job_id, _ = _funded_job(credit)
        first = metering.post("/v1/usage", json=usage_body(job_id, user_id))

        replay = metering.post("/v1/usage", json=usage_body(job_id, user_id))

        assert (first.status_code, replay.status_code) == (201, 200)
        assert replay.headers["Idempotent-Replayed"] == "true"
        assert replay.json() == first.json()
        assert credit.ledger_amounts(user_id) == [-1700, 10_000_000]

    def test_twenty_concurrent_duplicates_charge_once(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        user_id, job_id, _ = _funded_job(credit)
        url = metering.base_url.join("/v1/usage")

        def post(_: int) -> httpx.Response:
            return httpx.post(
                url, json=usage_body(job_id, user_id), headers=AUTH_HEADERS, timeout=60
            )

        with ThreadPoolExecutor(max_workers=20) as pool:
            responses = list(pool.map(post, range(20)))

        statuses = sorted(response.status_code for response in responses)
        assert statuses == [200] * 19 + [201]
        assert {response.json()["id"] for response in responses} == {responses[0].json()["id"]}
        assert {response.json()["settlement"]["state"] for response in responses} == {"settled"}
        assert credit.ledger_amounts(user_id) == [-1700, 10_000_000]

    def test_the_same_job_with_other_figures_is_refused(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        user_id, job_id, _ = _funded_job(credit)
        metering.post("/v1/usage", json=usage_body(job_id, user_id))

        response = metering.post("/v1/usage", json=usage_body(job_id, user_id, wall_seconds=99))

        assert response.status_code == 409
        error = response.json()["error"]
        assert error["code"] == "usage_record_conflict"
        assert error["differing_fields"] == ["billed_seconds"]
        assert credit.ledger_amounts(user_id) == [-1700, 10_000_000]

    def test_a_cost_above_the_hold_is_capped_at_the_hold(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        user_id, job_id, hold_id = _funded_job(credit, hold=1_000)

        record = metering.post("/v1/usage", json=usage_body(job_id, user_id)).json()

        assert (record["cost"], record["settlement"]["amount"]) == (1700, 1000)
        assert record["settlement"]["charged"] == 1000
        assert credit.hold(hold_id)["status"] == "captured"
        assert credit.ledger_amounts(user_id) == [-1000, 10_000_000]

    def test_no_hold_is_refused_and_stored(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        user_id, job_id = unique("user"), unique("job")

        response = metering.post("/v1/usage", json=usage_body(job_id, user_id))

        assert response.status_code == 201
        settlement = response.json()["settlement"]
        assert (settlement["state"], settlement["error_code"]) == ("refused", "hold_not_found")
        stored = metering.get(f"/v1/usage/{response.json()['id']}").json()
        assert stored["settlement"]["state"] == "refused"
