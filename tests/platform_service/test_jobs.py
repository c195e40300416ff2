"""Jobs through the platform over real HTTP: the real gateway on the real apiserver, the
real credit_service and metering_service on PostgreSQL, a local object store.

Jobs do not run here (execution is the gateway's): the tests move them with the CRD client
and write their outcome into the store where a worker writes it.
"""

from __future__ import annotations

import base64
import hashlib
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from gridweave_clients import Conflict, InvalidRequest, PaymentRequired, Unauthorized
from gridweave_clients.platform import PlatformClient
from gridweave_controller import JobPhase
from gridweave_runtime.storage import LocalObjectStore, attempt_objects, input_objects
from tests.job_gateway.gateway_factories import GatewayServer
from tests.metering_service.factories import usage_body
from tests.platform_service.factories import (
    MAX_SUBMISSION,
    PlatformServer,
    User,
    submit_body,
)
from tests.support.credit_server import CreditServer

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

#: metering's default price of an AMD slice up to 16 GiB, micro-credits per GPU-second
AMD_16G_PRICE = 90
#: the hold of ``submit_body()``: 90 x 60 s x 1 GPU
DEFAULT_HOLD = AMD_16G_PRICE * 60
FUNDS = 10**9


@pytest.fixture
def alice(platform: PlatformServer, credit: CreditServer) -> User:
    """A funded user."""
    user = platform.new_user()
    credit.fund(user.user_id, FUNDS)
    return user


def _submit(platform: PlatformServer, user: User, **overrides: Any) -> httpx.Response:
    return platform.http.post("/v1/jobs", json=submit_body(**overrides), headers=user.headers)


def _submitted(platform: PlatformServer, user: User, **overrides: Any) -> str:
    response = _submit(platform, user, **overrides)
    assert response.status_code == 201, response.text
    job_id: str = response.json()["job_id"]
    return job_id


def _stored_jobs(storage_dir: Path) -> set[str]:
    jobs = storage_dir / "jobs"
    return {path.name for path in jobs.iterdir()} if jobs.exists() else set()


class TestSubmit:
    def test_the_hold_the_inputs_and_the_job(
        self, platform: PlatformServer, gateway: GatewayServer, credit: CreditServer, alice: User
    ) -> None:
        response = _submit(platform, alice)
        assert response.status_code == 201, response.text
        body = response.json()
        assert body["phase"] == "Pending" and not body["finished"]
        assert body["hold_amount"] == DEFAULT_HOLD
        assert credit.account(alice.user_id)["held"] == DEFAULT_HOLD

        job = gateway.crd.get_job(body["job_id"])
        assert job.spec.user_id == alice.user_id
        keys = input_objects(body["job_id"])
        store = LocalObjectStore(gateway.storage_dir)
        assert job.spec.function_ref == store.uri(keys.function)
        assert store.get(job.spec.function_ref) == base64.b64decode(submit_body()["function"])
        assert job.spec.args_ref is not None
        assert store.get(job.spec.args_ref) == base64.b64decode(submit_body()["args"])

    def test_vendor_any_holds_the_dearest_vendors_price(
        self, platform: PlatformServer, alice: User
    ) -> None:
        # 80 GiB: NVIDIA 560 and AMD 500 per GPU-second; the job may land on either
        response = _submit(
            platform, alice, vendor="any", vram_mb=81920, gpu_count=2, timeout_seconds=10
        )
        assert response.status_code == 201, response.text
        assert response.json()["hold_amount"] == 560 * 10 * 2

    def test_short_of_credits_is_402_with_the_figures_and_nothing_is_created(
        self, platform: PlatformServer, credit: CreditServer
    ) -> None:
        user = platform.new_user()
        before = _stored_jobs(platform.storage_dir)
        response = _submit(platform, user)  # no account at all
        assert response.status_code == 402
        error = response.json()["error"]
        assert error["code"] == "insufficient_credits"
        assert (error["balance"], error["held"], error["needed"]) == (0, 0, DEFAULT_HOLD)

        credit.fund(user.user_id, 1_000)
        error = _submit(platform, user).json()["error"]
        assert (error["balance"], error["held"], error["available"]) == (1_000, 0, 1_000)
        assert error["needed"] == DEFAULT_HOLD and "5400" in error["message"]
        assert platform.http.get("/v1/jobs", headers=user.headers).json()["jobs"] == []
        assert _stored_jobs(platform.storage_dir) == before

    def test_no_gpu_big_enough_passes_the_gateways_422_and_leaves_nothing(
        self, platform: PlatformServer, credit: CreditServer, alice: User
    ) -> None:
        before = _stored_jobs(platform.storage_dir)
        response = _submit(platform, alice, vendor="nvidia", vram_mb=200_000)
        assert response.status_code == 422
        error = response.json()["error"]
        assert error["fields"][0]["field"] == "vram_mb"
        assert "A100 80GB with 81920 MiB" in error["fields"][0]["message"]
        account = credit.account(alice.user_id)
        assert (account["balance"], account["held"]) == (FUNDS, 0)  # held, then released
        assert len(credit.ledger_amounts(alice.user_id)) == 1  # the funding; holds move no balance
        assert _stored_jobs(platform.storage_dir) == before
        assert platform.http.get("/v1/jobs", headers=alice.headers).json()["jobs"] == []

    def test_gpu_models_reach_the_gateway_and_its_422_names_them(
        self, platform: PlatformServer, credit: CreditServer, alice: User
    ) -> None:
        taken = _submit(platform, alice, vendor="nvidia", gpu_models=["A100"])
        assert taken.status_code == 201, taken.text
        assert taken.json()["gpu_models"] == ["A100"]
        refused = _submit(platform, alice, vendor="nvidia", gpu_models=["H100"])
        assert refused.status_code == 422
        error = refused.json()["error"]
        assert error["fields"][0]["field"] == "gpu_models"
        assert "its models: NVIDIA A100 80GB" in error["fields"][0]["message"]
        assert credit.account(alice.user_id)["held"] == taken.json()["hold_amount"]  # released

    @pytest.mark.parametrize(
        ("overrides", "field"),
        [
            ({"function": "not base64!"}, "function"),
            ({"function": ""}, "function"),
            ({"vram_mb": "8192"}, "vram_mb"),
            ({"vendor": "intel"}, "vendor"),
            ({"timeout_seconds": 0}, "timeout_seconds"),
            ({"surprise": 1}, "surprise"),
            ({"pip": ["--index-url=https://evil.example/simple"]}, "pip.0"),  # the item
            ({"pip": ["six", "-e ."]}, "pip.1"),
            ({"pip": ["six @ https://example.com/six.whl"]}, "pip.0"),
            ({"pip": ["six\n--index-url http://evil.example"]}, "pip.0"),
            ({"pip": "six"}, "pip"),
            ({"pip": ["six"] * 65}, "pip"),
            ({"gpu_models": "A100"}, "gpu_models"),
            ({"gpu_models": ["A100", "A100"]}, "gpu_models"),
            ({"gpu_models": ["A1;00"]}, "gpu_models.0"),
        ],
    )
    def test_bad_fields_are_named(
        self, platform: PlatformServer, alice: User, overrides: dict[str, Any], field: str
    ) -> None:
        response = _submit(platform, alice, **overrides)
        assert response.status_code == 422, response.text
        assert response.json()["error"]["fields"][0]["field"] == field

    def test_a_submission_past_the_limit_is_413(
        self, platform: PlatformServer, alice: User
    ) -> None:
        big = base64.b64encode(b"x" * MAX_SUBMISSION).decode()
        response = _submit(platform, alice, function=big)
        assert response.status_code == 413
        assert response.json()["error"]["code"] == "request_too_large"


class TestIdempotency:
    def _submit_with(
        self, platform: PlatformServer, user: User, key: str, **overrides: Any
    ) -> httpx.Response:
        headers = {**user.headers, "Idempotency-Key": key}
        return platform.http.post("/v1/jobs", json=submit_body(**overrides), headers=headers)

    def test_a_retry_answers_the_same_job_and_holds_once(
        self, platform: PlatformServer, credit: CreditServer, alice: User
    ) -> None:
        first = self._submit_with(platform, alice, "retry-1")
        again = self._submit_with(platform, alice, "retry-1")
        assert (first.status_code, again.status_code) == (201, 200)
        assert first.headers["Idempotent-Replayed"] == "false"
        assert again.headers["Idempotent-Replayed"] == "true"
        assert first.json()["job_id"] == again.json()["job_id"]
        assert again.json()["hold_amount"] == DEFAULT_HOLD
        assert credit.account(alice.user_id)["held"] == DEFAULT_HOLD

        other = self._submit_with(platform, alice, "retry-1", vram_mb=4096, max_retries=0)
        assert other.status_code == 409
        error = other.json()["error"]
        assert error["code"] == "idempotency_conflict"
        assert error["differing_fields"] == ["vram_mb", "max_retries"]

    def test_a_retry_asking_for_other_packages_names_pip(
        self, platform: PlatformServer, alice: User
    ) -> None:
        first = self._submit_with(platform, alice, "retry-pip", pip=["six==1.16.0"])
        assert first.status_code == 201 and first.json()["pip"] == ["six==1.16.0"]
        again = self._submit_with(platform, alice, "retry-pip", pip=["six==1.16.0"])
        assert again.status_code == 200 and again.json()["job_id"] == first.json()["job_id"]
        other = self._submit_with(platform, alice, "retry-pip", pip=["six==1.15.0"])
        assert other.status_code == 409
        assert other.json()["error"]["differing_fields"] == ["pip"]

    def test_a_refused_submissions_key_is_spent(
        self, platform: PlatformServer, credit: CreditServer, alice: User
    ) -> None:
        too_big = {"vendor": "nvidia", "vram_mb": 200_000}
        assert self._submit_with(platform, alice, "refused-1", **too_big).status_code == 422
        again = self._submit_with(platform, alice, "refused-1", **too_big)
        assert again.status_code == 409
        assert again.json()["error"]["code"] == "idempotency_conflict"
        assert credit.account(alice.user_id)["held"] == 0

    def test_racing_retries_make_one_job(
        self, platform: PlatformServer, credit: CreditServer, alice: User
    ) -> None:
        with ThreadPoolExecutor(4) as pool:
            answers = list(
                pool.map(lambda _: self._submit_with(platform, alice, "race-1"), range(4))
            )
        assert sorted(answer.status_code for answer in answers) == [200, 200, 200, 201]
        assert len({answer.json()["job_id"] for answer in answers}) == 1
        assert credit.account(alice.user_id)["held"] == DEFAULT_HOLD

    def test_keys_are_per_user(
        self, platform: PlatformServer, credit: CreditServer, alice: User
    ) -> None:
        bob = platform.new_user()
        credit.fund(bob.user_id, FUNDS)
        mine = self._submit_with(platform, alice, "shared-key").json()["job_id"]
        theirs = self._submit_with(platform, bob, "shared-key")
        assert theirs.status_code == 201 and theirs.json()["job_id"] != mine

    def test_a_bad_key_is_named(self, platform: PlatformServer, alice: User) -> None:
        response = self._submit_with(platform, alice, "has space")
        assert response.status_code == 422
        assert response.json()["error"]["fields"][0]["field"] == "Idempotency-Key"


class TestIsolation:
    def test_another_users_job_is_not_found(
        self, platform: PlatformServer, credit: CreditServer, alice: User
    ) -> None:
        job_id = _submitted(platform, alice)
        bob = platform.new_user()
        credit.fund(bob.user_id, FUNDS)
        _submitted(platform, bob)
        missing = platform.http.get("/v1/jobs/job-00000000000000000000", headers=bob.headers)
        for method, path in [
            ("GET", f"/v1/jobs/{job_id}"),
            ("POST", f"/v1/jobs/{job_id}/cancel"),
            ("GET", f"/v1/jobs/{job_id}/result"),
            ("GET", f"/v1/jobs/{job_id}/logs"),
        ]:
            response = platform.http.request(method, path, headers=bob.headers)
            assert response.status_code == 404, (method, path)
            assert response.json()["error"]["code"] == missing.json()["error"]["code"]
        listed = platform.http.get("/v1/jobs", headers=bob.headers).json()["jobs"]
        assert job_id not in {job["job_id"] for job in listed} and len(listed) == 1
        mine = platform.http.get(f"/v1/jobs/{job_id}", headers=alice.headers)
        assert mine.status_code == 200 and mine.json()["phase"] == "Pending"


class TestCancel:
    def test_cancel_then_cancel_again(
        self, platform: PlatformServer, credit: CreditServer, alice: User
    ) -> None:
        job_id = _submitted(platform, alice)
        assert credit.account(alice.user_id)["held"] == DEFAULT_HOLD
        first = platform.http.post(f"/v1/jobs/{job_id}/cancel", headers=alice.headers)
        again = platform.http.post(f"/v1/jobs/{job_id}/cancel", headers=alice.headers)
        assert first.status_code == again.status_code == 200
        assert first.json()["phase"] == again.json()["phase"] == "Cancelled"
        # never allocated, never billed: the whole hold is back, once
        account = credit.account(alice.user_id)
        assert (account["balance"], account["held"]) == (FUNDS, 0)
        assert credit.ledger_amounts(alice.user_id) == [FUNDS]
        listed = platform.http.get(
            "/v1/jobs", params={"phase": "Cancelled"}, headers=alice.headers
        ).json()["jobs"]
        assert [job["job_id"] for job in listed] == [job_id]


class TestOutcomes:
    def _run(self, gateway: GatewayServer, job_id: str, stdout: bytes) -> LocalObjectStore:
        """Allocate and start the job as the gateway would, and write its output."""
        gateway.crd.set_job_allocated(job_id, "gpu-b", [0])
        gateway.crd.set_job_running(job_id)
        store = LocalObjectStore(gateway.storage_dir)
        store.put(attempt_objects(job_id, 0).stdout, stdout)
        return store

    def test_result_and_logs_of_a_completed_job(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User
    ) -> None:
        job_id = _submitted(platform, alice)
        early = platform.http.get(f"/v1/jobs/{job_id}/result", headers=alice.headers)
        assert early.status_code == 409
        error = early.json()["error"]
        assert (error["code"], error["phase"]) == ("job_not_finished", "Pending")

        store = self._run(gateway, job_id, b"step 1\nstep 2\n")
        pickled_value = b"\x80\x05\x95opaque result bytes\x00\xff"
        result_uri = store.put(attempt_objects(job_id, 0).result, pickled_value)
        gateway.crd.set_job_completed(job_id, 2.5, result_ref=result_uri)

        result = platform.http.get(f"/v1/jobs/{job_id}/result", headers=alice.headers)
        assert result.status_code == 200
        assert result.content == pickled_value
        assert result.headers["content-type"] == "application/vnd.gridweave.pickle"

        logs = platform.http.get(f"/v1/jobs/{job_id}/logs", headers=alice.headers).json()
        assert logs["stdout"] == "step 1\nstep 2\n" and logs["stderr"] == ""
        assert logs["finished"] and logs["stdout_offset"] == 14
        later = platform.http.get(
            f"/v1/jobs/{job_id}/logs", params={"stdout_offset": 7}, headers=alice.headers
        ).json()
        assert later["stdout"] == "step 2\n"
        job = platform.http.get(f"/v1/jobs/{job_id}", headers=alice.headers).json()
        assert (job["phase"], job["billed_seconds"], job["node"]) == ("Completed", 3, "gpu-b")

    def test_a_result_waited_for_comes_when_the_job_completes(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User
    ) -> None:
        job_id = _submitted(platform, alice)
        waited = platform.http.get(
            f"/v1/jobs/{job_id}/result", params={"wait": 1}, headers=alice.headers
        )
        assert waited.status_code == 409  # the wait ran out: as without one
        assert waited.json()["error"]["code"] == "job_not_finished"
        store = self._run(gateway, job_id, b"")
        result_uri = store.put(attempt_objects(job_id, 0).result, b"value")

        def complete_soon() -> None:
            time.sleep(1.0)
            gateway.crd.set_job_completed(job_id, 1.0, result_ref=result_uri)

        completer = threading.Thread(target=complete_soon)
        completer.start()
        started = time.monotonic()
        result = platform.http.get(
            f"/v1/jobs/{job_id}/result", params={"wait": 20}, headers=alice.headers
        )
        completer.join()
        assert result.status_code == 200 and result.content == b"value"
        assert time.monotonic() - started < 10  # answered at the completion, not at 20 s
        too_long = platform.http.get(
            f"/v1/jobs/{job_id}/result", params={"wait": 31}, headers=alice.headers
        )
        assert too_long.status_code == 422 and "wait" in too_long.text

    def test_a_failed_job_answers_its_remote_traceback(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User
    ) -> None:
        job_id = _submitted(platform, alice)
        store = self._run(gateway, job_id, b"")
        traceback = "Traceback (most recent call last):\n  ...\nValueError: boom\n"
        store.put(attempt_objects(job_id, 0).error, traceback.encode())
        gateway.crd.set_job_failed(job_id, "Exception", "ValueError: boom", wall_seconds=1.0)
        response = platform.http.get(f"/v1/jobs/{job_id}/result", headers=alice.headers)
        assert response.status_code == 409
        error = response.json()["error"]
        assert error["code"] == "job_did_not_complete" and error["phase"] == "Failed"
        assert error["traceback"] == traceback and error["reason"] == "Exception"


class TestAccount:
    def test_credits(self, platform: PlatformServer, alice: User) -> None:
        credits = platform.http.get("/v1/credits", headers=alice.headers).json()
        assert credits == {
            "user_id": alice.user_id,
            "balance": FUNDS,
            "held": 0,
            "available": FUNDS,
        }
        newcomer = platform.new_user()
        assert platform.http.get("/v1/credits", headers=newcomer.headers).json()["balance"] == 0

    def test_usage_and_the_bill_of_a_job(
        self, platform: PlatformServer, metering: httpx.Client, alice: User
    ) -> None:
        job_id = _submitted(platform, alice)
        # what the gateway reports once the job ran 3 s on the AMD GPU
        record = usage_body(job_id, alice.user_id, vendor="amd", vram_mb=8192, wall_seconds=3.0)
        assert metering.post("/v1/usage", json=record).status_code == 201
        usage = platform.http.get("/v1/usage", headers=alice.headers).json()
        assert [item["job_id"] for item in usage["records"]] == [job_id]
        assert usage["totals"]["cost"] == 3 * AMD_16G_PRICE
        credits = platform.http.get("/v1/credits", headers=alice.headers).json()
        assert (credits["balance"], credits["held"]) == (FUNDS - 3 * AMD_16G_PRICE, 0)
        bad = platform.http.get("/v1/usage", params={"from": "yesterday"}, headers=alice.headers)
        assert bad.status_code == 422 and bad.json()["error"]["fields"][0]["field"] == "from"

    def test_one_jobs_record_however_many_came_after(
        self, platform: PlatformServer, metering: httpx.Client
    ) -> None:
        user = platform.new_user()
        jobs = [f"job-{uuid.uuid4().hex[:16]}" for _ in range(3)]
        for job_id in jobs:
            record = usage_body(job_id, user.user_id, vendor="amd", vram_mb=8192, wall_seconds=1.0)
            assert metering.post("/v1/usage", json=record).status_code == 201
        newest = platform.http.get("/v1/usage?limit=1", headers=user.headers).json()
        assert [item["job_id"] for item in newest["records"]] == [jobs[-1]]
        oldest = platform.http.get(
            "/v1/usage", params={"job_id": jobs[0], "limit": 1}, headers=user.headers
        ).json()
        assert [item["job_id"] for item in oldest["records"]] == [jobs[0]]
        assert oldest["totals"]["cost"] == oldest["records"][0]["cost"] > 0
        # another user's job is nobody's record here
        other = platform.new_user()
        theirs = platform.http.get("/v1/usage", params={"job_id": jobs[0]}, headers=other.headers)
        assert theirs.status_code == 200 and theirs.json()["records"] == []
        bad = platform.http.get("/v1/usage", params={"job_id": ""}, headers=user.headers)
        assert bad.status_code == 422 and bad.json()["error"]["fields"][0]["field"] == "job_id"


def test_nodes_show_each_gpus_held_and_free_vram(
    platform: PlatformServer, gateway: GatewayServer, alice: User
) -> None:
    job_id = _submitted(platform, alice, vram_mb=10_000)
    gateway.crd.set_job_allocated(job_id, "gpu-b", [0])
    nodes = platform.http.get("/v1/nodes", headers=alice.headers).json()["nodes"]
    by_name = {node["name"]: node for node in nodes}
    assert set(by_name) == {"gpu-a", "gpu-b"} and not by_name["gpu-b"]["ready"]
    amd = by_name["gpu-b"]["gpus"][0]
    assert (amd["model"], amd["vram_mb"]) == ("AMD Instinct MI250", 65536)
    assert amd["held_mb"] >= 10_000 and amd["free_mb"] == 65536 - amd["held_mb"]
    assert job_id in [held["name"] for held in amd["allocations"]]  # her own job, named
    assert {held["user_id"] for held in amd["allocations"]} == {alice.user_id}  # hers only
    assert amd["used_mb"] is None  # a declared GPU: nothing measures it
    assert [gpu["index"] for gpu in by_name["gpu-a"]["gpus"]] == [0, 1]
    assert platform.http.get("/v1/nodes").status_code == 401


class TestPlatformClient:
    """The typed client the SDK and the CLI are built on, against the same stack."""

    def test_submit_wait_result_and_refusals(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User
    ) -> None:
        with PlatformClient(platform.url, alice.key) as client:
            assert client.get_me().user_id == alice.user_id
            job = client.submit_job(
                b"\x80\x05fn", b"\x80\x05args", vram_mb=4096, vendor="amd", idempotency_key="k1"
            )
            replayed = client.submit_job(
                b"\x80\x05fn", b"\x80\x05args", vram_mb=4096, vendor="amd", idempotency_key="k1"
            )
            assert replayed.job_id == job.job_id
            assert job.phase is JobPhase.PENDING and job.hold_amount == DEFAULT_HOLD * 60
            with pytest.raises(Conflict) as early:
                client.get_job_result(job.job_id)
            assert early.value.code == "job_not_finished"

            gateway.crd.set_job_allocated(job.job_id, "gpu-b", [0])
            gateway.crd.set_job_running(job.job_id)
            store = LocalObjectStore(gateway.storage_dir)
            uri = store.put(attempt_objects(job.job_id, 0).result, b"\x80\x05value")
            digest = hashlib.sha256(b"\x80\x05value").hexdigest()
            gateway.crd.set_job_completed(job.job_id, 0.2, result_ref=uri, result_sha256=digest)
            assert client.get_job_result(job.job_id) == b"\x80\x05value"
            assert client.get_job(job.job_id).phase is JobPhase.COMPLETED
            assert [item.job_id for item in client.list_jobs(JobPhase.COMPLETED).jobs] == [
                job.job_id
            ]

            held = client.get_credits().held
            with pytest.raises(InvalidRequest) as too_big:
                client.submit_job(b"fn", vram_mb=300_000, vendor="nvidia")
            assert too_big.value.field == "vram_mb"
            assert client.get_credits().held <= held  # the refused job's hold was released

        with (
            PlatformClient(platform.url, platform.new_user().key) as poor,
            pytest.raises(PaymentRequired) as short,
        ):
            poor.submit_job(b"fn", vram_mb=1024, vendor="amd", timeout_seconds=10)
        assert short.value.details["needed"] == AMD_16G_PRICE * 10
        with PlatformClient(platform.url) as anonymous, pytest.raises(Unauthorized):
            anonymous.get_me()


class TestConditions:
    """One job's read carries its conditions (the dashboard's phase timeline); lists not."""

    def test_a_cancelled_jobs_conditions_say_when_and_why(
        self, platform: PlatformServer, alice: User
    ) -> None:
        job_id = _submitted(platform, alice)
        assert (
            platform.http.get(f"/v1/jobs/{job_id}", headers=alice.headers).json()["conditions"]
            == []
        )  # Pending: no condition set yet
        assert platform.http.post(f"/v1/jobs/{job_id}/cancel", headers=alice.headers).is_success
        job = platform.http.get(f"/v1/jobs/{job_id}", headers=alice.headers).json()
        finished = [c for c in job["conditions"] if c["type"] == "Finished"]
        assert len(finished) == 1, job["conditions"]
        assert (finished[0]["status"], finished[0]["reason"]) == ("True", "Cancelled")
        assert finished[0]["last_transition_time"] >= job["created_at"][:19]
        listed = platform.http.get("/v1/jobs", headers=alice.headers).json()["jobs"]
        paged = platform.http.get("/v1/jobs", params={"limit": 5}, headers=alice.headers).json()
        for entry in [*listed, *paged["jobs"]]:
            assert entry["conditions"] == []

    def test_each_move_is_a_condition_with_its_time_and_reason(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User
    ) -> None:
        job_id = _submitted(platform, alice)
        gateway.crd.set_job_allocated(job_id, "gpu-b", [0])
        gateway.crd.set_job_running(job_id)
        gateway.crd.set_job_failed(job_id, "Exception", "ValueError: boom", wall_seconds=1.0)
        job = platform.http.get(f"/v1/jobs/{job_id}", headers=alice.headers).json()
        by_type = {c["type"]: c for c in job["conditions"]}
        assert {"Allocated", "Running", "Finished"} <= set(by_type), job["conditions"]
        assert (by_type["Finished"]["status"], by_type["Finished"]["reason"]) == (
            "True",
            "Exception",
        )
        assert "boom" in by_type["Finished"]["message"]
        times = [by_type[t]["last_transition_time"] for t in ("Allocated", "Running", "Finished")]
        assert times == sorted(times)
