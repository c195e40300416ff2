"""The dashboard's job routes over real HTTP on the real gateway and apiserver: pages of
jobs with filters, live logs as server-sent events (resumed with Last-Event-ID), and the
whole log as a file. Jobs are moved with the CRD client; their output is written where a
worker writes it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from gridweave_runtime.errors import InvalidRequest
from gridweave_runtime.storage import LocalObjectStore, attempt_objects
from platform_service.services.outcomes import parse_log_position
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.factories import PlatformServer, User, submit_body
from tests.support.credit_server import CreditServer
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]


@pytest.fixture
def alice(platform: PlatformServer, credit: CreditServer) -> User:
    """A funded user."""
    user = platform.new_user()
    credit.fund(user.user_id, 10**9)
    return user


def _submitted(platform: PlatformServer, user: User, count: int) -> list[str]:
    ids = []
    for _ in range(count):
        response = platform.http.post("/v1/jobs", json=submit_body(), headers=user.headers)
        assert response.status_code == 201, response.text
        ids.append(response.json()["job_id"])
    return ids


def _page(platform: PlatformServer, user: User, **params: Any) -> dict[str, Any]:
    response = platform.http.get("/v1/jobs", params=params, headers=user.headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


class TestPages:
    def test_pages_walk_every_job_newest_first_once(
        self, platform: PlatformServer, alice: User
    ) -> None:
        submitted = _submitted(platform, alice, 5)
        seen: list[tuple[str, str]] = []
        cursor = None
        for _ in range(5):
            body = _page(platform, alice, limit=2, **({"cursor": cursor} if cursor else {}))
            assert body["total"] == 5 and len(body["jobs"]) <= 2
            seen += [(job["created_at"], job["job_id"]) for job in body["jobs"]]
            cursor = body["next_cursor"]
            if cursor is None:
                break
        # newest first; jobs created in one second (the apiserver's resolution) by id
        assert seen == sorted(seen, reverse=True)
        assert sorted(job_id for _, job_id in seen) == sorted(submitted)
        unpaged = platform.http.get("/v1/jobs", headers=alice.headers).json()
        assert {job["job_id"] for job in unpaged["jobs"]} == set(submitted)  # the SDK's: all
        assert unpaged["next_cursor"] is None

    def test_phase_and_date_filters(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User
    ) -> None:
        first, second, third = _submitted(platform, alice, 3)
        platform.http.post(f"/v1/jobs/{second}/cancel", headers=alice.headers)
        gateway.crd.set_job_allocated(third, "gpu-b", [0])
        gateway.crd.set_job_running(third)
        # pages are read from the gateway's informer, which sees the direct writes shortly
        wait_until(
            lambda: (
                {
                    job["job_id"]
                    for job in _page(platform, alice, limit=10, phase=["Cancelled", "Running"])[
                        "jobs"
                    ]
                }
                == {second, third}
            ),
            what="the cancelled and the running job listed",
        )
        assert _page(platform, alice, limit=10, phase="Pending")["total"] == 1
        later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
        assert _page(platform, alice, limit=10, created_after=later)["jobs"] == []
        assert _page(platform, alice, limit=10, created_before=later)["total"] == 3

    def test_another_users_jobs_are_not_listed(
        self, platform: PlatformServer, credit: CreditServer, alice: User
    ) -> None:
        _submitted(platform, alice, 1)
        bob = platform.new_user()
        assert _page(platform, bob, limit=10) == {"jobs": [], "total": 0, "next_cursor": None}

    @pytest.mark.parametrize(
        ("params", "field"),
        [
            ({"limit": 0}, "limit"),
            ({"limit": 501}, "limit"),
            ({"limit": 5, "cursor": "not-a-cursor"}, "cursor"),
            ({"phase": "Sleeping"}, "phase"),
            ({"created_after": "yesterday"}, "created_after"),
        ],
    )
    def test_bad_parameters_are_named(
        self, platform: PlatformServer, alice: User, params: dict[str, Any], field: str
    ) -> None:
        response = platform.http.get("/v1/jobs", params=params, headers=alice.headers)
        assert response.status_code == 422, response.text
        assert field in str(response.json()["error"]["fields"])


def _events(response: httpx.Response, until: str) -> list[tuple[str, str, str]]:
    """(id, event, data) of each event read, up to and including the first ``until``."""
    events: list[tuple[str, str, str]] = []
    fields: dict[str, str] = {}
    for line in response.iter_lines():
        if line.startswith(":"):
            continue
        if line:
            name, _, value = line.partition(": ")
            fields[name] = value
            continue
        if fields:
            events.append((fields.get("id", ""), fields.get("event", ""), fields.get("data", "")))
            fields = {}
            if events[-1][1] == until:
                return events
    return events


class TestLiveLogs:
    def test_lines_arrive_as_printed_and_a_reconnection_resumes(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User
    ) -> None:
        (job_id,) = _submitted(platform, alice, 1)
        gateway.crd.set_job_allocated(job_id, "gpu-b", [0])
        gateway.crd.set_job_running(job_id)
        store = LocalObjectStore(gateway.storage_dir)
        objects = attempt_objects(job_id, 0)
        store.put(objects.stdout, b"step 1\nstep 2\npartial")
        store.put(objects.stderr, b"warn\n")
        url = f"/v1/jobs/{job_id}/logs/stream"
        with platform.http.stream("GET", url, headers=alice.headers, timeout=30) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            first = _events(response, until="stderr")
        assert [(event, data) for _, event, data in first] == [
            ("stdout", "step 1"),
            ("stdout", "step 2"),
            ("stderr", "warn"),
        ]
        assert first[1][0] == "14.0" and first[2][0] == "14.5"

        # the connection dropped after "step 1"; meanwhile the job printed more and ended
        store.put(objects.stdout, b"step 1\nstep 2\npartial line\nlast\n")
        gateway.crd.set_job_completed(job_id, 1.0)
        headers = {**alice.headers, "Last-Event-ID": first[0][0]}
        with platform.http.stream("GET", url, headers=headers, timeout=30) as response:
            resumed = _events(response, until="end")
        assert [(event, data) for _, event, data in resumed] == [
            ("stdout", "step 2"),
            ("stdout", "partial line"),
            ("stdout", "last"),
            ("stderr", "warn"),
            ("end", "Completed"),
        ]

        whole = platform.http.get(
            f"/v1/jobs/{job_id}/logs/download", params={"stream": "stdout"}, headers=alice.headers
        )
        assert whole.content == b"step 1\nstep 2\npartial line\nlast\n"
        assert f'filename="{job_id}.stdout.txt"' in whole.headers["content-disposition"]
        page = platform.http.get(
            f"/v1/jobs/{job_id}/logs/download",
            params={"stream": "stdout", "offset": 7, "length": 7},
            headers=alice.headers,
        )
        assert page.content == b"step 2\n" and page.headers["x-log-size"] == "32"

    def test_another_users_job_is_404_and_a_bad_position_is_named(
        self, platform: PlatformServer, alice: User
    ) -> None:
        (job_id,) = _submitted(platform, alice, 1)
        bob = platform.new_user()
        url = f"/v1/jobs/{job_id}/logs/stream"
        assert platform.http.get(url, headers=bob.headers).status_code == 404
        download = platform.http.get(f"/v1/jobs/{job_id}/logs/download", headers=bob.headers)
        assert download.status_code == 404
        bad = platform.http.get(url, headers={**alice.headers, "Last-Event-ID": "12"})
        assert bad.status_code == 422 and "Last-Event-ID" in bad.text


@pytest.mark.parametrize("value", ["12", "².0", "1.٣", "-1.0", "1.2.3", "", "9" * 20 + ".0"])
def test_a_log_position_not_sent_by_the_api_is_invalid_naming_the_header(value: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        parse_log_position(value, field="Last-Event-ID")
    assert refused.value.fields[0]["field"] == "Last-Event-ID"


def test_a_log_position_sent_by_the_api_is_read() -> None:
    assert parse_log_position(" 120.7 ", field="Last-Event-ID") == (120, 7)
