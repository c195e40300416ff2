"""kuberay-service's /v1/crd over real HTTP: auth, Status bodies, health and metrics."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import httpx
import pytest

from gridweave_controller import TransportError
from tests.support.kuberay_fixtures import TOKEN, KubeRayServer, kuberay_cluster_app

JOB = {
    "jobId": "job-1",
    "userId": "alice@example.com",
    "functionRef": "file:///objects/fn.pkl",
    "vramMb": 4000,
}


def _client(server: KubeRayServer, token: str | None = TOKEN) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.Client(base_url=server.url, headers=headers, timeout=10)


class TestAuthentication:
    @pytest.mark.parametrize(
        "token", [None, "wrong-token", TOKEN + "x"], ids=["none", "wrong", "longer"]
    )
    def test_crd_routes_refuse_without_the_token_and_do_nothing(
        self, kuberay: KubeRayServer, token: str | None, caplog: pytest.LogCaptureFixture
    ) -> None:
        caplog.set_level(logging.DEBUG)
        with _client(kuberay, token) as http:
            created = http.post("/v1/crd/jobs", json=JOB)
            listed = http.get("/v1/crd/jobs")
        assert created.status_code == 401
        assert listed.status_code == 401
        assert kuberay.store.list("gridweave", "gridweavejobs", None) == []
        assert "wrong-token" not in caplog.text

    def test_token_header_alternative_is_accepted(self, kuberay: KubeRayServer) -> None:
        with httpx.Client(base_url=kuberay.url, headers={"X-Gridweave-Token": TOKEN}) as http:
            assert http.get("/v1/crd/jobs").status_code == 200

    def test_health_and_metrics_are_public(self, kuberay: KubeRayServer) -> None:
        with _client(kuberay, None) as http:
            assert http.get("/healthz").status_code == 200
            http.get("/v1/crd/jobs")
            metrics = http.get("/metrics")
        assert metrics.status_code == 200
        assert "gridweave_http_requests_total" in metrics.text


class TestStatusBodies:
    def test_missing_job_is_a_not_found_status(self, kuberay: KubeRayServer) -> None:
        with _client(kuberay) as http:
            response = http.get("/v1/crd/jobs/nope")
        assert response.status_code == 404
        body = response.json()
        assert (body["kind"], body["reason"], body["code"]) == ("Status", "NotFound", 404)

    def test_duplicate_create_is_already_exists(self, kuberay: KubeRayServer) -> None:
        with _client(kuberay) as http:
            assert http.post("/v1/crd/jobs", json=JOB).status_code == 201
            again = http.post("/v1/crd/jobs", json=JOB)
        assert again.status_code == 409
        assert again.json()["reason"] == "AlreadyExists"

    @pytest.mark.parametrize(
        ("change", "field"),
        [
            ({"vramMb": "lots"}, "vramMb"),
            ({"vendor": "intel"}, "vendor"),
            ({"colour": "blue"}, "colour"),
            ({"gpuCount": 1.5}, "gpuCount"),
        ],
    )
    def test_bad_body_is_invalid_naming_the_field(
        self, kuberay: KubeRayServer, change: dict[str, object], field: str
    ) -> None:
        with _client(kuberay) as http:
            response = http.post("/v1/crd/jobs", json=JOB | change)
        assert response.status_code == 422
        body = response.json()
        assert body["reason"] == "Invalid"
        assert [cause["field"] for cause in body["details"]["causes"]] == [field]
        assert field in body["message"]

    def test_controller_validation_names_the_field(self, kuberay: KubeRayServer) -> None:
        with _client(kuberay) as http:
            response = http.post("/v1/crd/jobs", json=JOB | {"jobId": "Not_A_DNS_Name"})
        assert response.status_code == 422
        assert "job_id" in response.json()["message"]

    def test_illegal_move_is_an_invalid_transition(self, kuberay: KubeRayServer) -> None:
        with _client(kuberay) as http:
            http.post("/v1/crd/jobs", json=JOB)
            response = http.post("/v1/crd/jobs/job-1/completed", json={"wallSeconds": 3})
        assert response.status_code == 422
        body = response.json()
        assert body["reason"] == "InvalidTransition"
        assert (body["details"]["currentPhase"], body["details"]["targetPhase"]) == (
            "Pending",
            "Completed",
        )


class TestRoundTrip:
    def test_a_job_walks_its_phases(self, kuberay: KubeRayServer) -> None:
        with _client(kuberay) as http:
            assert http.post("/v1/crd/jobs", json={**JOB, "gpuCount": 2}).status_code == 201
            placement = {"node": "gpu-1", "gpuIndices": [0, 1]}
            assert http.post("/v1/crd/jobs/job-1/allocated", json=placement).status_code == 200
            assert http.post("/v1/crd/jobs/job-1/running").status_code == 200
            done = http.post("/v1/crd/jobs/job-1/completed", json={"wallSeconds": 2.5})
            listed = http.get("/v1/crd/jobs", params={"userId": "alice@example.com"})
        status = done.json()["status"]
        assert (status["phase"], status["billedSeconds"], status["gpuIndices"]) == (
            "Completed",
            3,
            [0, 1],
        )
        assert [item["metadata"]["name"] for item in listed.json()["items"]] == ["job-1"]

    def test_delete_answers_204(self, kuberay: KubeRayServer) -> None:
        with _client(kuberay) as http:
            http.post("/v1/crd/jobs", json=JOB)
            assert http.delete("/v1/crd/jobs/job-1").status_code == 204
            assert http.get("/v1/crd/jobs/job-1").status_code == 404


class TestNoPublicDocuments:
    @pytest.mark.parametrize("path", ["/openapi.json", "/docs", "/redoc"])
    def test_api_documents_are_not_served(self, kuberay: KubeRayServer, path: str) -> None:
        with _client(kuberay, None) as http:
            assert http.get(path).status_code == 401  # deny by default: nothing is disclosed
        with _client(kuberay) as http:
            assert http.get(path).status_code == 404


class TestEveryCrdRouteNeedsTheToken:
    def test_each_route_and_method_answers_401_without_it(self, kuberay: KubeRayServer) -> None:
        paths = kuberay.app.openapi()["paths"]
        routes = [
            (method.upper(), path.replace("{job_id}", "j").replace("{endpoint_id}", "e"))
            for path, operations in paths.items()
            if path.startswith("/v1/crd")
            for method in operations
        ]
        assert len(routes) >= 20
        with _client(kuberay, None) as http:
            codes = {(m, p): http.request(m, p, json={}).status_code for m, p in routes}
        assert set(codes.values()) == {401}, codes
        assert kuberay.store.list("gridweave", "gridweavejobs", None) == []


def test_without_a_cluster_configuration_the_service_does_not_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    app = kuberay_cluster_app(tmp_path / "no-such-kubeconfig", "gridweave")

    async def start() -> None:  # the cluster connection is made as the app starts serving
        async with app.router.lifespan_context(app):
            pass

    with pytest.raises(TransportError, match="no Kubernetes configuration"):
        asyncio.run(start())
