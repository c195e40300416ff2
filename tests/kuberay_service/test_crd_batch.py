"""``POST /v1/crd/batch``: several writes in one request, each answered as its own route."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from gridweave_controller.operations import MAX_BATCH_CALLS
from tests.support.kuberay_fixtures import TOKEN, KubeRayServer

JOBS = "gridweavejobs"


def _job(job_id: str, **changes: Any) -> dict[str, Any]:
    return {
        "jobId": job_id,
        "userId": "alice@example.com",
        "functionRef": "file:///objects/fn.pkl",
        "vramMb": 4000,
        **changes,
    }


def _create(job_id: str, **changes: Any) -> dict[str, Any]:
    return {"operation": "create_job", "arguments": _job(job_id, **changes)}


def _allocate(job_id: str, **arguments: Any) -> dict[str, Any]:
    defaults = {"jobId": job_id, "node": "gpu-1", "gpuIndices": [0]}
    return {"operation": "set_job_allocated", "arguments": defaults | arguments}


def _post(server: KubeRayServer, body: Any, token: str | None = TOKEN) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=server.url, headers=headers, timeout=10) as http:
        return http.post("/v1/crd/batch", json=body)


def _names(server: KubeRayServer) -> set[str]:
    return {raw["metadata"]["name"] for raw in server.store.list("gridweave", JOBS, None)}


class TestEachCallAnsweredAsItsRoute:
    """Calls run concurrently, as separate requests would: each names its own object."""

    def test_mixed_calls_each_get_their_own_code_and_body(self, kuberay: KubeRayServer) -> None:
        with httpx.Client(base_url=kuberay.url, headers={"Authorization": f"Bearer {TOKEN}"}) as h:
            for name in ("taken", "ready", "two-gpus", "doomed"):
                assert h.post("/v1/crd/jobs", json=_job(name)).status_code == 201
            single_duplicate = h.post("/v1/crd/jobs", json=_job("taken"))
            single_invalid = h.post("/v1/crd/jobs", json=_job("alone", vramMb="lots"))
        response = _post(
            kuberay,
            {
                "calls": [
                    _create("fresh"),
                    _create("taken"),
                    _create("bad-vram", vramMb="lots"),
                    _allocate("ready"),
                    _allocate("nobody"),
                    _allocate("two-gpus", gpuIndices=[0, 1]),  # two GPUs for a 1-GPU job
                    {"operation": "delete_job", "arguments": {"jobId": "doomed"}},
                ]
            },
        )
        assert response.status_code == 200
        results = response.json()["results"]
        codes = [result["code"] for result in results]
        assert codes == [201, 409, 422, 200, 404, 422, 204]
        created, duplicate, invalid, allocated, missing, wrong, deleted = results
        assert created["body"]["metadata"]["name"] == "fresh"
        assert duplicate["body"] == single_duplicate.json() | {
            "message": duplicate["body"]["message"]
        }
        assert duplicate["body"]["reason"] == "AlreadyExists"
        assert invalid["body"]["details"] == single_invalid.json()["details"]
        assert allocated["body"]["status"]["phase"] == "Allocated"
        assert missing["body"]["reason"] == "NotFound"
        assert wrong["body"]["reason"] == "Invalid"
        assert deleted["body"] is None
        assert _names(kuberay) == {"taken", "ready", "two-gpus", "fresh"}

    def test_a_path_parameter_missing_or_not_text_is_invalid_naming_it(
        self, kuberay: KubeRayServer
    ) -> None:
        response = _post(
            kuberay,
            {
                "calls": [
                    {"operation": "set_job_running", "arguments": {}},
                    {"operation": "set_job_running", "arguments": {"jobId": 7}},
                    {"operation": "delete_job", "arguments": {"jobId": "x", "force": True}},
                ]
            },
        )
        assert response.status_code == 200
        results = response.json()["results"]
        assert [result["code"] for result in results] == [422, 422, 422]
        fields = [[c["field"] for c in r["body"]["details"]["causes"]] for r in results]
        assert fields == [["jobId"], ["jobId"], ["force"]]


class TestRefusedBatches:
    @pytest.mark.parametrize(
        ("body", "field"),
        [
            ({}, "calls"),
            ({"calls": []}, "calls"),
            ({"calls": "create_job"}, "calls"),
            ({"calls": [_create("a")] * (MAX_BATCH_CALLS + 1)}, "calls"),
            (
                {"calls": [{"operation": "get_job", "arguments": {"jobId": "a"}}]},
                "calls.0.operation",
            ),
            ({"calls": [{"operation": "create_job", "arguments": []}]}, "calls.0.arguments"),
            ({"calls": [_create("a") | {"colour": "blue"}]}, "calls.0.colour"),
            ({"calls": [_create("a")], "atomic": True}, "atomic"),
        ],
        ids=["none", "empty", "not-a-list", "too-many", "a-read", "not-an-object", "extra", "top"],
    )
    def test_a_malformed_batch_is_invalid_naming_the_field_and_runs_nothing(
        self, kuberay: KubeRayServer, body: Any, field: str
    ) -> None:
        response = _post(kuberay, body)
        assert response.status_code == 422
        causes = [cause["field"] for cause in response.json()["details"]["causes"]]
        assert field in causes
        assert _names(kuberay) == set()

    def test_a_batch_needs_the_internal_token(self, kuberay: KubeRayServer) -> None:
        assert _post(kuberay, {"calls": [_create("a")]}, token=None).status_code == 401
        assert _post(kuberay, {"calls": [_create("a")]}, token="wrong").status_code == 401
        assert _names(kuberay) == set()
