"""The gateway's API over real HTTP, on the real Kubernetes API: submit, read, list, cancel."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gridweave_clients import Conflict, InvalidRequest
from gridweave_clients.gateway.models import SubmitJobRequest
from gridweave_clients.gateway.operations import list_job_page
from gridweave_controller import JobPhase, NotFound
from gridweave_runtime.storage import attempt_objects
from job_gateway.app import create_app
from job_gateway.execution import ExecutionSettings
from job_gateway.inventory import StaticFileSource
from job_gateway.settings import GatewaySettings
from tests.job_gateway.gateway_factories import (
    INVENTORY_YAML,
    GatewayServer,
    new_job_id,
    running_gateway,
    submit_body,
)
from tests.support.credentials import service_auth
from tests.support.http_server import running_service
from tests.support.kubeapi import KubeAPI
from tests.support.kuberay_fixtures import TOKEN as KUBERAY_TOKEN
from tests.support.kuberay_fixtures import KubeRayServer

pytestmark = pytest.mark.kubeapi


@pytest.fixture(scope="module")
def gateway(kubeapi: KubeAPI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    """One gateway for the module; every test uses fresh job ids."""
    with running_gateway(kubeapi, tmp_path_factory.mktemp("gateway")) as server:
        yield server


def refused_fields(response: httpx.Response) -> list[str]:
    """The fields a 422 names."""
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    return [item["field"] for item in error["fields"]]


def assert_not_created(gateway: GatewayServer, job_id: str) -> None:
    """Nothing was created under ``job_id``."""
    with pytest.raises(NotFound):
        gateway.crd.get_job(job_id)


class TestSubmit:
    def test_creates_a_pending_job_with_every_field(self, gateway: GatewayServer) -> None:
        body = submit_body(
            owner="team-ml",
            args_ref="file:///objects/args.pkl",
            gpu_count=1,
            timeout_seconds=120,
            max_retries=3,
            priority=5,
            hold_reference=None,
        )
        response = gateway.http.post("/v1/jobs", json=body)
        assert response.status_code == 201, response.text
        answer = response.json()
        assert answer["job_id"] == body["job_id"]
        assert answer["phase"] == "Pending"
        assert (answer["owner"], answer["priority"], answer["hold_reference"]) == (
            "team-ml",
            5,
            body["job_id"],
        )
        stored = gateway.crd.get_job(body["job_id"])
        assert stored.spec.args_ref == "file:///objects/args.pkl"
        assert (stored.spec.priority, stored.spec.max_retries) == (5, 3)
        assert (stored.spec.vendor, stored.spec.vram_mb, stored.spec.timeout_seconds) == (
            "amd",
            8192,
            120,
        )
        assert stored.billing_owner == "team-ml"

    def test_a_vram_request_no_gpu_can_hold_names_the_largest_gpu(
        self, gateway: GatewayServer
    ) -> None:
        body = submit_body(vram_mb=90_000, vendor="nvidia")
        response = gateway.http.post("/v1/jobs", json=body)
        assert refused_fields(response) == ["vram_mb"]
        message = response.json()["error"]["fields"][0]["message"]
        assert "NVIDIA A100 80GB with 81920 MiB" in message
        assert_not_created(gateway, body["job_id"])

    def test_gpu_models_place_and_refuse_naming_the_field(self, gateway: GatewayServer) -> None:
        body = submit_body(vram_mb=1024, vendor="any", gpu_models=["A100"])
        created = gateway.http.post("/v1/jobs", json=body)
        assert created.status_code == 201, created.text
        assert created.json()["gpu_models"] == ["A100"]
        refused = submit_body(vram_mb=1024, vendor="any", gpu_models=["H100", "B200"])
        response = gateway.http.post("/v1/jobs", json=refused)
        assert refused_fields(response) == ["gpu_models"]
        message = response.json()["error"]["fields"][0]["message"]
        assert "H100 or B200" in message and "NVIDIA A100 80GB" in message
        assert_not_created(gateway, refused["job_id"])
        for bad in ("A100", [], ["A100", "A100"], ["-x"]):
            answer = gateway.http.post("/v1/jobs", json=submit_body(vram_mb=1024, gpu_models=bad))
            (field,) = refused_fields(answer)  # the list, or the item at fault
            assert field.split(".")[0] == "gpu_models", answer.text

    def test_cpu_no_node_has_is_refused_naming_it(self, gateway: GatewayServer) -> None:
        response = gateway.http.post("/v1/jobs", json=submit_body(vram_mb=1024, cpu_millis=10**6))
        # the inventory file declares no CPU: no limit, so it is taken
        assert response.status_code == 201, response.text

    def test_vendor_any_names_the_largest_gpu_of_every_vendor(self, gateway: GatewayServer) -> None:
        response = gateway.http.post("/v1/jobs", json=submit_body(vram_mb=100_000, vendor="any"))
        assert refused_fields(response) == ["vram_mb"]
        assert "81920 MiB" in response.json()["error"]["fields"][0]["message"]

    def test_more_gpus_than_one_node_has_names_gpu_count(self, gateway: GatewayServer) -> None:
        body = submit_body(vram_mb=1024, gpu_count=3, vendor="nvidia")
        response = gateway.http.post("/v1/jobs", json=body)
        assert refused_fields(response) == ["gpu_count"]
        assert "at most 2 GPU(s)" in response.json()["error"]["fields"][0]["message"]
        assert_not_created(gateway, body["job_id"])

    def test_an_unknown_vendor_is_422_naming_vendor(self, gateway: GatewayServer) -> None:
        body = submit_body(vendor="intel")
        assert refused_fields(gateway.http.post("/v1/jobs", json=body)) == ["vendor"]
        assert_not_created(gateway, body["job_id"])

    def test_a_duplicate_job_id_is_409_and_leaves_the_first_job(
        self, gateway: GatewayServer
    ) -> None:
        body = submit_body()
        assert gateway.http.post("/v1/jobs", json=body).status_code == 201
        again = gateway.http.post("/v1/jobs", json={**body, "vram_mb": 1024})
        assert again.status_code == 409
        assert again.json()["error"]["code"] == "job_already_exists"
        assert again.json()["error"]["job_id"] == body["job_id"]
        assert gateway.crd.get_job(body["job_id"]).spec.vram_mb == 8192

    def test_a_hold_reference_other_than_the_job_id_is_refused(
        self, gateway: GatewayServer
    ) -> None:
        body = submit_body(hold_reference="another-hold")
        assert refused_fields(gateway.http.post("/v1/jobs", json=body)) == ["hold_reference"]
        assert_not_created(gateway, body["job_id"])
        same = submit_body()
        same["hold_reference"] = same["job_id"]
        assert gateway.http.post("/v1/jobs", json=same).status_code == 201

    @pytest.mark.parametrize(
        ("overrides", "field"),
        [
            ({"job_id": "Not_A_Label"}, "job_id"),
            ({"vram_mb": "8192"}, "vram_mb"),
            ({"vram_mb": 0}, "vram_mb"),
            ({"gpu_count": 0}, "gpu_count"),
            ({"priority": 1001}, "priority"),
            ({"max_retries": -1}, "max_retries"),
            ({"timeout_seconds": 0}, "timeout_seconds"),
            ({"user_id": "has space"}, "user_id"),
            ({"function_ref": ""}, "function_ref"),
            ({"colour": "blue"}, "colour"),
        ],
    )
    def test_bad_fields_are_named_and_nothing_is_created(
        self, gateway: GatewayServer, overrides: dict[str, Any], field: str
    ) -> None:
        body = submit_body(**overrides)
        assert refused_fields(gateway.http.post("/v1/jobs", json=body)) == [field]
        if field != "job_id":
            assert_not_created(gateway, str(body["job_id"]))

    def test_without_the_token_it_is_401_and_nothing_is_created(
        self, gateway: GatewayServer
    ) -> None:
        body = submit_body()
        response = httpx.post(f"{gateway.url}/v1/jobs", json=body)
        assert response.status_code == 401
        assert_not_created(gateway, body["job_id"])

    def test_the_typed_client_raises_the_same_refusals(self, gateway: GatewayServer) -> None:
        request = SubmitJobRequest.model_validate(submit_body())
        created = gateway.client.submit_job(request)
        assert created.phase is JobPhase.PENDING
        with pytest.raises(Conflict):
            gateway.client.submit_job(request)
        impossible = SubmitJobRequest.model_validate(submit_body(vram_mb=10**6))
        with pytest.raises(InvalidRequest) as caught:
            gateway.client.submit_job(impossible)
        assert caught.value.field == "vram_mb"


class TestRead:
    def test_get_answers_the_job_and_404_for_a_missing_one(self, gateway: GatewayServer) -> None:
        body = submit_body()
        gateway.http.post("/v1/jobs", json=body)
        answer = gateway.http.get(f"/v1/jobs/{body['job_id']}").json()
        assert (answer["job_id"], answer["phase"], answer["user_id"]) == (
            body["job_id"],
            "Pending",
            "alice",
        )
        missing = gateway.http.get(f"/v1/jobs/{new_job_id()}")
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "job_not_found"

    def test_list_by_user_and_phase(self, gateway: GatewayServer) -> None:
        user = f"user-{new_job_id()}"
        ids = [submit_body(user_id=user)["job_id"] for _ in range(3)]
        for job_id in ids:
            gateway.http.post("/v1/jobs", json=submit_body(job_id, user_id=user))
        gateway.http.post("/v1/jobs", json=submit_body(user_id="someone-else"))
        gateway.http.post(f"/v1/jobs/{ids[1]}/cancel")
        listed = gateway.client.list_jobs(user).jobs
        assert {job.job_id for job in listed} == set(ids)
        # oldest first (creationTimestamp has whole seconds: the id breaks ties)
        order = [(job.created_at, job.job_id) for job in listed]
        assert order == sorted(order)
        pending = gateway.client.list_jobs(user, phase=JobPhase.PENDING)
        assert {job.job_id for job in pending.jobs} == {ids[0], ids[2]}
        cancelled = gateway.http.get("/v1/jobs", params={"user_id": user, "phase": "Cancelled"})
        assert [job["job_id"] for job in cancelled.json()["jobs"]] == [ids[1]]
        bad = gateway.http.get("/v1/jobs", params={"phase": "Sleeping"})
        assert refused_fields(bad) == ["phase"]

    def test_pages_come_from_the_informer_newest_first(self, gateway: GatewayServer) -> None:
        user = f"user-{new_job_id()}"
        ids = [submit_body(user_id=user)["job_id"] for _ in range(3)]
        for job_id in ids:
            gateway.http.post("/v1/jobs", json=submit_body(job_id, user_id=user))
        gateway.http.post(f"/v1/jobs/{ids[1]}/cancel")
        seen: list[tuple[str, str]] = []
        cursor = None
        deadline = time.monotonic() + 10
        while len(seen) < 3:  # the informer sees the jobs a moment after their creation
            assert time.monotonic() < deadline, seen
            page = gateway.client.run(list_job_page(user, limit=2, cursor=cursor))
            seen += [(str(job.created_at), job.job_id) for job in page.jobs]
            cursor = page.next_cursor
            if cursor is None and len(seen) < 3:
                seen, cursor = [], None
                time.sleep(0.1)
        assert seen == sorted(seen, reverse=True) and {i for _, i in seen} == set(ids)
        cancelled = gateway.client.run(
            list_job_page(user, limit=10, phases=[JobPhase.CANCELLED, JobPhase.FAILED])
        )
        assert [job.job_id for job in cancelled.jobs] == [ids[1]] and cancelled.total == 1
        bad_pages: list[tuple[dict[str, str | int], str]] = [
            ({"limit": 5}, "user_id"),
            ({"user_id": user, "limit": 5, "phases": "Pending,Sleeping"}, "phases"),
            ({"user_id": user, "limit": 5, "cursor": "nope"}, "cursor"),
        ]
        for params, field in bad_pages:
            assert refused_fields(gateway.http.get("/v1/jobs", params=params)) == [field]


class TestCancel:
    def test_a_pending_job_is_cancelled_and_cancelling_again_answers_it(
        self, gateway: GatewayServer
    ) -> None:
        body = submit_body()
        gateway.http.post("/v1/jobs", json=body)
        first = gateway.http.post(f"/v1/jobs/{body['job_id']}/cancel")
        assert first.status_code == 200
        assert first.json()["phase"] == "Cancelled"
        again = gateway.http.post(f"/v1/jobs/{body['job_id']}/cancel")
        assert again.status_code == 200
        assert again.json() == first.json()
        assert gateway.crd.get_job(body["job_id"]).phase is JobPhase.CANCELLED

    def test_a_running_job_is_billed_up_to_the_cancel(self, gateway: GatewayServer) -> None:
        job_id = new_job_id()
        gateway.crd.create_job(job_id, "alice", "file:///f.pkl", vram_mb=1024, vendor="amd")
        gateway.crd.set_job_allocated(job_id, "gpu-b", [0])
        running = gateway.crd.set_job_running(job_id)
        answer = gateway.http.post(f"/v1/jobs/{job_id}/cancel").json()
        assert answer["phase"] == "Cancelled"
        assert answer["wall_seconds"] is not None and answer["wall_seconds"] >= 0
        assert answer["billed_seconds"] == max(1, answer["billed_seconds"])
        assert running.status.started_at is not None

    def test_a_finished_job_cannot_be_cancelled(self, gateway: GatewayServer) -> None:
        job_id = new_job_id()
        gateway.crd.create_job(job_id, "alice", "file:///f.pkl", vram_mb=1024, vendor="amd")
        gateway.crd.set_job_failed(job_id, "Lost", "test")
        response = gateway.http.post(f"/v1/jobs/{job_id}/cancel")
        assert response.status_code == 409
        assert response.json()["error"] == {
            "code": "job_finished",
            "message": "the job has finished; its phase cannot change",
            "job_id": job_id,
            "phase": "Failed",
        }
        assert gateway.http.post(f"/v1/jobs/{new_job_id()}/cancel").status_code == 404


class TestResult:
    def test_a_waiting_job_has_no_outcome_yet(self, gateway: GatewayServer) -> None:
        body = submit_body()
        gateway.http.post("/v1/jobs", json=body)
        result = gateway.client.get_job_result(body["job_id"])
        assert not result.finished
        assert (result.result_ref, result.error_ref, result.stdout_ref) == (None, None, None)

    def test_a_completed_job_names_its_result_and_output(self, gateway: GatewayServer) -> None:
        job_id = new_job_id()
        gateway.crd.create_job(job_id, "alice", "file:///f.pkl", vram_mb=1024, vendor="amd")
        gateway.crd.set_job_allocated(job_id, "gpu-b", [0])
        gateway.crd.set_job_running(job_id)
        objects = attempt_objects(job_id, 0)
        result_uri = (gateway.storage_dir / objects.result).resolve().as_uri()
        gateway.crd.set_job_completed(job_id, 1.5, result_ref=result_uri)
        result = gateway.client.get_job_result(job_id)
        assert result.finished and result.phase is JobPhase.COMPLETED
        assert result.result_ref == result_uri
        assert result.error_ref is None
        assert result.stdout_ref == (gateway.storage_dir / objects.stdout).resolve().as_uri()
        assert result.stderr_ref == (gateway.storage_dir / objects.stderr).resolve().as_uri()
        assert result.wall_seconds == 1.5


class TestService:
    def test_healthz_and_metrics_need_no_token(self, gateway: GatewayServer) -> None:
        assert httpx.get(f"{gateway.url}/healthz").status_code == 200
        assert httpx.get(f"{gateway.url}/metrics").status_code == 200


def test_the_storage_layout_is_per_attempt(tmp_path: Path) -> None:
    first, second = attempt_objects("job-1", 0), attempt_objects("job-1", 1)
    assert first.result == "jobs/job-1/attempt-0/result.pkl"
    assert second.stdout == "jobs/job-1/attempt-1/stdout.txt"
    assert len({first.result, first.error, first.stdout, first.stderr}) == 4


class TestProxiedTransport:
    def test_the_default_transport_goes_through_kuberay_service(
        self, kuberay: KubeRayServer, tmp_path: Path
    ) -> None:
        inventory = tmp_path / "inventory.yaml"
        inventory.write_text(INVENTORY_YAML)
        settings = GatewaySettings(
            **service_auth(KUBERAY_TOKEN), kuberay_url=kuberay.url, state_dir=tmp_path
        )
        assert settings.crd_transport == "proxied"
        app = create_app(
            settings,
            inventory_source=StaticFileSource(inventory),
            execution=ExecutionSettings(execute_jobs=False),  # placement only, no Ray
        )
        headers = {"Authorization": f"Bearer {KUBERAY_TOKEN}"}
        with running_service(app, headers) as http:
            body = submit_body()
            assert http.post("/v1/jobs", json=body).status_code == 201
            assert http.get(f"/v1/jobs/{body['job_id']}").json()["phase"] == "Pending"
            assert http.post("/v1/jobs", json=body).status_code == 409
        stored = kuberay.store.get("gridweave", "gridweavejobs", body["job_id"])
        assert stored["spec"]["vendor"] == "amd"
