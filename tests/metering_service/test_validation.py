"""Auth, health, metrics and 4xx answers that name the bad field."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.metering_service.factories import unique, usage_body


def _bad_fields(response: httpx.Response) -> list[str]:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    return [item["field"] for item in error["fields"]]


class TestAuth:
    @pytest.mark.parametrize(
        ("method", "path"),
        [("POST", "/v1/usage"), ("GET", "/v1/usage?user_id=u"), ("GET", "/v1/usage/1")],
    )
    def test_every_route_needs_the_internal_token(
        self, metering: httpx.Client, method: str, path: str
    ) -> None:
        response = httpx.request(method, metering.base_url.join(path), json={})

        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"

    def test_a_wrong_token_is_refused(self, metering: httpx.Client) -> None:
        response = httpx.get(
            metering.base_url.join("/v1/usage/1"), headers={"Authorization": "Bearer wrong"}
        )

        assert response.status_code == 401

    def test_healthz_and_metrics_need_no_token(self, metering: httpx.Client) -> None:
        health = httpx.get(metering.base_url.join("/healthz"))
        metrics = httpx.get(metering.base_url.join("/metrics"))

        assert (health.status_code, health.json()) == (200, {"status": "ok"})
        assert 'service="metering_service"' in metrics.text


class TestBadUsageRecords:
    @pytest.mark.parametrize(
        ("overrides", "field"),
        [
            ({"wall_seconds": -1}, "wall_seconds"),
            ({"wall_seconds": "NaN"}, "wall_seconds"),
            ({"vendor": "intel"}, "vendor"),
            ({"vram_mb": 0}, "vram_mb"),
            ({"gpu_count": 0}, "gpu_count"),
            ({"gpu_count": 2}, "gpu_indices"),
            ({"gpu_indices": [1, 1], "gpu_count": 2}, "gpu_indices"),
            ({"gpu_indices": [-1]}, "gpu_indices.0"),
            ({"user_id": ""}, "user_id"),
            ({"endpoint_id": "e-1"}, "job_id"),
            ({"job_id": None}, "job_id"),
            ({"hold_reference": "another-job"}, "hold_reference"),
            ({"finished_at": "2026-01-01T00:00:00"}, "finished_at"),
            (
                {"started_at": "2026-01-02T00:00:00Z", "finished_at": "2026-01-01T00:00:00Z"},
                "finished_at",
            ),
            ({"colour": "blue"}, "colour"),
        ],
    )
    def test_names_the_field(
        self, metering: httpx.Client, overrides: dict[str, Any], field: str
    ) -> None:
        body = {**usage_body(unique("job"), unique("user")), **overrides}

        assert _bad_fields(metering.post("/v1/usage", json=body)) == [field]

    @pytest.mark.parametrize(
        "field",
        ["job_id", "hold_reference", "user_id", "owner_id", "node", "vendor"],
    )
    @pytest.mark.parametrize("bad", ["\x00", "\x1b", "\n", " ", "\x7f"])
    def test_a_control_character_or_space_in_any_string_is_named(
        self, metering: httpx.Client, field: str, bad: str
    ) -> None:
        job_id = unique("job")
        body = {**usage_body(job_id, unique("user")), "hold_reference": job_id}
        body[field] = f"{body.get(field) or 'x'}{bad}a"

        assert _bad_fields(metering.post("/v1/usage", json=body)) == [field]

    @pytest.mark.parametrize("field", ["endpoint_id", "hold_reference"])
    def test_a_nul_byte_in_an_endpoint_run_is_named(
        self, metering: httpx.Client, field: str
    ) -> None:
        body = usage_body(unique("job"), unique("user"))
        del body["job_id"]
        body |= {"endpoint_id": unique("endpoint"), "hold_reference": unique("run")}
        body[field] += "\x00"

        assert _bad_fields(metering.post("/v1/usage", json=body)) == [field]

    def test_a_nul_byte_in_the_queried_user_is_named(self, metering: httpx.Client) -> None:
        response = metering.get("/v1/usage", params={"user_id": "user\x00a"})

        assert _bad_fields(response) == ["user_id"]

    def test_an_unknown_record_is_404(self, metering: httpx.Client) -> None:
        response = metering.get("/v1/usage/999999")

        assert response.status_code == 404
        assert response.json()["error"]["code"] == "usage_record_not_found"
