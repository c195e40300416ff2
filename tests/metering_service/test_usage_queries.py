"""Usage per user and period, with totals over the whole period."""

from __future__ import annotations

import httpx
import pytest

from tests.metering_service.factories import unique, usage_body
from tests.support.credit_server import CreditServer


@pytest.fixture
def user_with_three_jobs(metering: httpx.Client, credit: CreditServer) -> str:
    """A user whose jobs finished on 1, 2 and 3 March 2026 (10, 20 and 30.5 seconds)."""
    user_id = unique("user")
    credit.fund(user_id, 10_000_000)
    for day, wall_seconds in ((1, 10), (2, 20), (3, 30.5)):
        job_id = unique("job")
        credit.place_hold(user_id, 100_000, reference=job_id)
        body = usage_body(
            job_id,
            user_id,
            wall_seconds=wall_seconds,
            gpu_count=2,
            gpu_indices=[0, 1],
            finished_at=f"2026-03-0{day}T12:00:00Z",
        )
        assert metering.post("/v1/usage", json=body).status_code == 201
    other_job = unique("job")
    metering.post("/v1/usage", json=usage_body(other_job, unique("someone-else")))
    return user_id


class TestListUsage:
    def test_a_period_selects_by_finish_time_with_totals(
        self, metering: httpx.Client, user_with_three_jobs: str
    ) -> None:
        page = metering.get(
            "/v1/usage",
            params={
                "user_id": user_with_three_jobs,
                "from": "2026-03-02T00:00:00Z",
                "to": "2026-03-04T00:00:00Z",
            },
        ).json()

        assert [record["billed_seconds"] for record in page["records"]] == [31, 20]
        assert page["totals"] == {
            "records": 2,
            "billed_seconds": 51,
            "gpu_seconds": 102,
            "cost": 102 * 170,
            "charged": 102 * 170,
        }

    def test_totals_cover_the_period_not_only_the_page(
        self, metering: httpx.Client, user_with_three_jobs: str
    ) -> None:
        first = metering.get("/v1/usage", params={"user_id": user_with_three_jobs, "limit": 2})
        second = metering.get(
            "/v1/usage",
            params={
                "user_id": user_with_three_jobs,
                "limit": 2,
                "before_id": first.json()["next_before_id"],
            },
        )

        assert len(first.json()["records"]) == 2
        assert first.json()["totals"]["billed_seconds"] == 61
        assert [record["billed_seconds"] for record in second.json()["records"]] == [10]
        assert second.json()["next_before_id"] is None

    def test_a_user_without_usage_has_zero_totals(self, metering: httpx.Client) -> None:
        page = metering.get("/v1/usage", params={"user_id": unique("idle")}).json()

        assert page["records"] == []
        assert page["totals"] == {
            "records": 0,
            "billed_seconds": 0,
            "gpu_seconds": 0,
            "cost": 0,
            "charged": 0,
        }

    @pytest.mark.parametrize(
        ("params", "field"),
        [
            ({"from": "2026-03-02T00:00:00Z", "to": "2026-03-01T00:00:00Z"}, "to"),
            ({"from": "2026-03-02T00:00:00"}, "from"),
            ({"to": "yesterday"}, "to"),
            ({"limit": 0}, "limit"),
        ],
    )
    def test_a_bad_period_names_the_field(
        self, metering: httpx.Client, params: dict[str, str], field: str
    ) -> None:
        response = metering.get("/v1/usage", params={"user_id": "u-1", **params})

        assert response.status_code == 422
        assert [item["field"] for item in response.json()["error"]["fields"]] == [field]

    def test_the_user_is_required(self, metering: httpx.Client) -> None:
        response = metering.get("/v1/usage")

        assert response.status_code == 422
        assert response.json()["error"]["fields"][0]["field"] == "user_id"


class TestByHoldReference:
    def test_only_the_record_of_that_hold(
        self, metering: httpx.Client, user_with_three_jobs: str
    ) -> None:
        every = metering.get("/v1/usage", params={"user_id": user_with_three_jobs}).json()
        wanted = every["records"][1]
        page = metering.get(
            "/v1/usage",
            params={"user_id": user_with_three_jobs, "hold_reference": wanted["hold_reference"]},
        ).json()
        assert [record["id"] for record in page["records"]] == [wanted["id"]]
        assert page["totals"]["records"] == 1

    def test_another_users_hold_reference_finds_nothing(
        self, metering: httpx.Client, user_with_three_jobs: str
    ) -> None:
        every = metering.get("/v1/usage", params={"user_id": user_with_three_jobs}).json()
        page = metering.get(
            "/v1/usage",
            params={"user_id": "someone", "hold_reference": every["records"][0]["hold_reference"]},
        ).json()
        assert page["records"] == []

    def test_a_reference_with_a_space_is_named(self, metering: httpx.Client) -> None:
        response = metering.get("/v1/usage", params={"user_id": "u", "hold_reference": "a b"})
        assert response.status_code == 422, response.text
        assert "hold_reference" in response.text
