"""What an adversarial caller found: ids past BIGINT, poisoned timestamps, borrowed holds."""

from __future__ import annotations

import httpx
import pytest

from tests.metering_service.factories import unique, usage_body
from tests.support.credit_server import CreditServer

pytestmark = pytest.mark.postgres

PAST_BIGINT = 2**63


def _funded_job(credit: CreditServer, user_id: str, *, hold: int = 1_000_000) -> tuple[str, int]:
    job_id = unique("job")
    credit.fund(user_id, 10_000_000)
    return job_id, credit.place_hold(user_id, hold, reference=job_id)


def _totals(metering: httpx.Client, user_id: str) -> dict[str, int]:
    response = metering.get("/v1/usage", params={"user_id": user_id})
    response.raise_for_status()
    totals: dict[str, int] = response.json()["totals"]
    return totals


class TestIdsPastBigint:
    def test_a_usage_page_before_an_id_past_bigint_is_422(self, metering: httpx.Client) -> None:
        response = metering.get(
            "/v1/usage", params={"user_id": unique("user"), "before_id": PAST_BIGINT}
        )
        largest = metering.get(
            "/v1/usage", params={"user_id": unique("user"), "before_id": PAST_BIGINT - 1}
        )
        assert response.status_code == 422
        assert [field["field"] for field in response.json()["error"]["fields"]] == ["before_id"]
        assert largest.status_code == 200

    def test_a_usage_id_past_bigint_is_422(self, metering: httpx.Client) -> None:
        assert metering.get(f"/v1/usage/{PAST_BIGINT}").status_code == 422
        assert metering.post(f"/v1/usage/{PAST_BIGINT}/settle").status_code == 422


# Instants PostgreSQL stores but Python cannot read back (UTC takes them out of years 1-9999),
# and the edges of what both take.
_OUT_OF_RANGE = [
    ("started_at", "0001-01-01T00:00:00+23:59"),
    ("finished_at", "9999-12-31T23:59:59-23:59"),
    ("started_at", "0001-01-01T00:00:00Z"),
]
_EDGES = [
    {"started_at": "0001-01-02T00:00:00Z", "finished_at": "0001-01-02T00:00:10Z"},
    {"started_at": "9999-12-30T23:59:00Z", "finished_at": "9999-12-30T23:59:59.999999Z"},
    {"started_at": "2026-01-01T00:00:00+14:00", "finished_at": "2026-01-01T00:00:10-12:00"},
]


class TestTimestamps:
    @pytest.mark.parametrize(("field", "value"), _OUT_OF_RANGE)
    def test_an_unreadable_instant_is_422_and_the_hold_still_settles(
        self, metering: httpx.Client, credit: CreditServer, field: str, value: str
    ) -> None:
        user_id = unique("user")
        job_id, hold_id = _funded_job(credit, user_id)

        refused = metering.post("/v1/usage", json=usage_body(job_id, user_id, **{field: value}))
        listed = metering.get("/v1/usage", params={"user_id": user_id})
        corrected = metering.post("/v1/usage", json=usage_body(job_id, user_id))

        assert refused.status_code == 422
        assert [item["field"] for item in refused.json()["error"]["fields"]] == [field]
        assert listed.status_code == 200
        assert listed.json()["records"] == []  # nothing was kept
        assert corrected.status_code == 201  # before: a 500 for ever, the hold left open
        assert corrected.json()["settlement"]["state"] == "settled"
        assert credit.hold(hold_id)["status"] == "captured"

    @pytest.mark.parametrize("stamps", _EDGES)
    def test_the_edges_are_kept_read_back_and_settled(
        self, metering: httpx.Client, credit: CreditServer, stamps: dict[str, str]
    ) -> None:
        user_id = unique("user")
        job_id, hold_id = _funded_job(credit, user_id)

        recorded = metering.post("/v1/usage", json=usage_body(job_id, user_id, **stamps))
        assert recorded.status_code == 201, recorded.text
        read = metering.get(f"/v1/usage/{recorded.json()['id']}")
        listed = metering.get("/v1/usage", params={"user_id": user_id})
        replayed = metering.post("/v1/usage", json=usage_body(job_id, user_id, **stamps))

        assert read.status_code == listed.status_code == 200
        assert read.json()["settlement"]["state"] == "settled"
        assert read.json()["started_at"].endswith("Z") or "+00:00" in read.json()["started_at"]
        assert replayed.status_code == 200
        assert credit.hold(hold_id)["status"] == "captured"

    @pytest.mark.parametrize("value", ["0001-01-01T00:00:00+23:59", "9999-12-31T23:59:59-23:59"])
    def test_a_period_bound_out_of_range_is_422(self, metering: httpx.Client, value: str) -> None:
        response = metering.get("/v1/usage", params={"user_id": unique("u"), "from": value})
        assert response.status_code == 422
        assert response.json()["error"]["fields"][0]["field"] == "from"


class TestOwnerOfTheHold:
    def test_a_record_billing_another_accounts_hold_is_409_and_not_kept(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        victim, user = unique("victim"), unique("user")
        job_id, hold_id = _funded_job(credit, victim)
        credit.fund(user, 10_000_000)

        refused = metering.post("/v1/usage", json=usage_body(job_id, user, owner_id=user))

        assert refused.status_code == 409
        assert refused.json()["error"] | {"message": ""} == {
            "code": "hold_owner_mismatch",
            "message": "",
            "owner_id": user,
            "hold_owner_id": victim,
            "hold_reference": job_id,
        }
        assert credit.account(victim)["balance"] == 10_000_000  # nothing moved
        assert credit.account(user)["balance"] == 10_000_000
        assert credit.hold(hold_id)["status"] == "open"
        assert _totals(metering, user)["records"] == 0  # no charge shown to who never paid
        assert _totals(metering, user)["charged"] == 0

        # the right record can still be recorded, and the hold is settled
        right = metering.post("/v1/usage", json=usage_body(job_id, victim))
        assert right.status_code == 201
        assert right.json()["settlement"]["state"] == "settled"
        assert credit.hold(hold_id)["status"] == "captured"
        assert _totals(metering, victim)["charged"] == right.json()["cost"]

    def test_the_user_pays_when_no_owner_is_named(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        owner, user = unique("org"), unique("user")
        job_id, hold_id = _funded_job(credit, owner)
        recorded = metering.post("/v1/usage", json=usage_body(job_id, user, owner_id=owner))
        assert recorded.status_code == 201
        assert recorded.json()["settlement"]["charged"] == recorded.json()["cost"]
        assert credit.hold(hold_id)["status"] == "captured"


class TestStrictNumbers:
    @pytest.mark.parametrize("value", ["5", True, "5.0", None])
    def test_wall_seconds_is_a_json_number_only(
        self, metering: httpx.Client, value: object
    ) -> None:
        body = usage_body(unique("job"), unique("user"), wall_seconds=value)
        response = metering.post("/v1/usage", json=body)
        assert response.status_code == 422
        assert response.json()["error"]["fields"][0]["field"] == "wall_seconds"

    def test_an_integer_number_of_seconds_is_a_number(
        self, metering: httpx.Client, credit: CreditServer
    ) -> None:
        user_id = unique("user")
        job_id, _ = _funded_job(credit, user_id)
        response = metering.post("/v1/usage", json=usage_body(job_id, user_id, wall_seconds=5))
        assert response.status_code == 201
        assert response.json()["billed_seconds"] == 5
