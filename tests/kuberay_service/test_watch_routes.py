"""kuberay-service's ``/v1/crd/watch`` and ``/v1/crd/list`` routes over real HTTP."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from gridweave_controller.store import ENDPOINTS, JOBS
from tests.contract.watch_transports import endpoint_body, job_body
from tests.support.kuberay_fixtures import TOKEN, KubeRayServer

NAMESPACE = "gridweave"


@pytest.fixture
def http(kuberay: KubeRayServer) -> Iterator[httpx.Client]:
    """A client of the served app, with the token."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=kuberay.url, headers=headers, timeout=30) as client:
        yield client


def stream_lines(http: httpx.Client, path: str, **params: str) -> list[dict[str, Any]]:
    """Every line of a watch stream, parsed, until the server ends it."""
    with http.stream("GET", path, params=params) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/json")
        return [json.loads(line) for line in response.iter_lines() if line]


class TestWatchRoute:
    def test_streams_the_changes_after_a_version_then_a_bookmark(
        self, kuberay: KubeRayServer, http: httpx.Client
    ) -> None:
        kuberay.store.create(NAMESPACE, JOBS, job_body("before"))
        listed = http.get("/v1/crd/list/jobs").json()
        version = listed["metadata"]["resourceVersion"]
        kuberay.store.create(NAMESPACE, JOBS, job_body("after"))
        kuberay.store.create(NAMESPACE, ENDPOINTS, endpoint_body("other-kind"))
        events = stream_lines(
            http, "/v1/crd/watch/jobs", resourceVersion=version, timeoutSeconds="1"
        )
        assert [(e["type"], e["object"]["metadata"].get("name")) for e in events] == [
            ("ADDED", "after"),
            ("BOOKMARK", None),
        ]
        assert events[-1]["object"]["kind"] == "GridweaveJob"

    def test_events_arrive_while_the_stream_is_open(
        self, kuberay: KubeRayServer, http: httpx.Client
    ) -> None:
        listed = http.get("/v1/crd/list/endpoints").json()
        later = threading.Timer(
            0.3, lambda: kuberay.store.create(NAMESPACE, ENDPOINTS, endpoint_body("ep"))
        )
        later.start()
        params = {
            "resourceVersion": listed["metadata"]["resourceVersion"],
            "timeoutSeconds": "2",
            "allowWatchBookmarks": "false",
        }
        events = stream_lines(http, "/v1/crd/watch/endpoints", **params)
        later.join()
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "ep")]

    def test_a_compacted_version_is_an_error_event_with_a_410_status(
        self, kuberay: KubeRayServer, http: httpx.Client
    ) -> None:
        kuberay.store.create(NAMESPACE, JOBS, job_body("one"))
        kuberay.store.patch_status(NAMESPACE, JOBS, "one", {"status": {"message": "m"}})
        kuberay.store.compact(kuberay.store.log.version)
        events = stream_lines(http, "/v1/crd/watch/jobs", resourceVersion="1")
        assert len(events) == 1 and events[0]["type"] == "ERROR"
        status = events[0]["object"]
        assert (status["kind"], status["reason"], status["code"]) == ("Status", "Expired", 410)

    def test_a_bad_selector_is_a_status_before_any_stream(self, http: httpx.Client) -> None:
        answer = http.get("/v1/crd/watch/jobs", params={"labelSelector": "a in ("})
        assert answer.status_code == 422  # kuberay-service answers every Invalid with 422
        assert answer.json()["kind"] == "Status" and answer.json()["reason"] == "BadRequest"

    @pytest.mark.parametrize(
        ("name", "value"),
        [("timeoutSeconds", "0"), ("timeoutSeconds", "soon"), ("resourceVersion", "abc")],
    )
    def test_bad_query_values_are_named(self, http: httpx.Client, name: str, value: str) -> None:
        answer = http.get("/v1/crd/watch/jobs", params={name: value})
        assert answer.status_code == 422
        causes = answer.json()["details"]["causes"]
        assert [cause["field"] for cause in causes] == [name]

    def test_the_token_is_required(self, kuberay: KubeRayServer) -> None:
        for path in ("/v1/crd/watch/jobs", "/v1/crd/list/jobs"):
            answer = httpx.get(kuberay.url + path, params={"timeoutSeconds": "1"})
            assert answer.status_code == 401
            assert answer.json()["kind"] == "Status"


class TestListRoute:
    def test_the_list_carries_its_resource_version(
        self, kuberay: KubeRayServer, http: httpx.Client
    ) -> None:
        created = kuberay.store.create(NAMESPACE, JOBS, job_body("a", user="bob"))
        kuberay.store.create(NAMESPACE, JOBS, job_body("b", user="carol"))
        body = http.get("/v1/crd/list/jobs", params={"labelSelector": "gridweave.io/user=bob"})
        listed = body.json()
        assert listed["kind"] == "GridweaveJobList"
        assert [item["metadata"]["name"] for item in listed["items"]] == ["a"]
        assert int(listed["metadata"]["resourceVersion"]) > int(
            created["metadata"]["resourceVersion"]
        )
