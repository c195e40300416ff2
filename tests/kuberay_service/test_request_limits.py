"""kuberay-service's answers to oversized input stay small and stay Kubernetes Status bodies."""

from __future__ import annotations

import httpx

from gridweave_clients.fields import MAX_UNKNOWN_FIELDS
from gridweave_runtime.errors import MAX_ERROR_FIELDS
from tests.support.kuberay_fixtures import TOKEN, KubeRayServer

JOB = {
    "jobId": "job-1",
    "userId": "alice@example.com",
    "functionRef": "file:///objects/fn.pkl",
    "vramMb": 4000,
}


def _post(server: KubeRayServer, body: object, **headers: str) -> httpx.Response:
    with httpx.Client(base_url=server.url, timeout=10) as http:
        return http.post(
            "/v1/crd/jobs", json=body, headers={"Authorization": f"Bearer {TOKEN}", **headers}
        )


class TestValidationErrorsStaySmall:
    def test_many_unknown_fields_are_one_cause(self, kuberay: KubeRayServer) -> None:
        body = JOB | {f"k{index}": 1 for index in range(50_000)}
        response = _post(kuberay, body)
        status = response.json()
        assert response.status_code == 422
        assert status["reason"] == "Invalid"
        assert [cause["field"] for cause in status["details"]["causes"]] == ["body"]
        assert len(response.content) < 2_000

    def test_the_causes_are_capped_and_the_rest_counted(self, kuberay: KubeRayServer) -> None:
        # unknown fields that each name a cause, plus every required field missing
        body = {f"k{index}": 1 for index in range(MAX_UNKNOWN_FIELDS)}
        response = _post(kuberay, body)
        status = response.json()
        assert response.status_code == 422
        assert len(status["details"]["causes"]) == MAX_ERROR_FIELDS
        assert status["message"].endswith(" more")


class TestBodyLimits:
    def test_an_oversized_body_is_a_413_status(self, kuberay: KubeRayServer) -> None:
        response = _post(kuberay, JOB | {"padding": "p" * 2_000_000})
        status = response.json()
        assert response.status_code == 413
        assert (status["kind"], status["code"], status["reason"]) == (
            "Status",
            413,
            "RequestEntityTooLarge",
        )
        assert response.headers["connection"] == "close"
