"""Per-user quotas and share weights on the gateway, over real HTTP on the real apiserver."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from gridweave_controller import JobPhase, NotFound
from tests.job_gateway.endpoints.factories import create, endpoint_body, new_endpoint_id
from tests.job_gateway.gateway_factories import (
    GatewayServer,
    new_job_id,
    running_gateway,
    submit_body,
)
from tests.support.kubeapi import KubeAPI
from tests.support.waiting import wait_until

pytestmark = pytest.mark.kubeapi

# never read: the endpoints stay Pending on the node that is not ready
REF = "file:///objects/class.pkl"

# nothing is placed (the node is not ready): every job stays Pending, holding its quota
INVENTORY = """
nodes:
  - name: gpu-q
    ready: false
    cpu_millis: 64000
    memory_mb: 262144
    gpus:
"""
INVENTORY += "".join(
    f"      - {{index: {i}, vendor: amd, model: AMD Instinct MI250, vram_mb: 65536}}\n"
    for i in range(8)
)


@pytest.fixture(scope="module")
def gateway(kubeapi: KubeAPI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    """One gateway for the module; every test uses its own users."""
    workdir = tmp_path_factory.mktemp("gateway")
    with running_gateway(kubeapi, workdir, inventory_yaml=INVENTORY) as server:
        yield server


def new_user() -> str:
    """A user of one test."""
    return f"usr-{uuid.uuid4().hex[:12]}"


def quota_refusal(response: httpx.Response) -> dict[str, Any]:
    """The error a 429 for a quota carries."""
    assert response.status_code == 429, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == "quota_exceeded"
    return error


def submit(gateway: GatewayServer, user: str, quota: dict[str, int] | None, **body: Any) -> str:
    """Submit a job of ``user``; 201 expected. Its id."""
    job_id = new_job_id()
    answer = gateway.http.post(
        "/v1/jobs", json=submit_body(job_id, user_id=user, quota=quota, **body)
    )
    assert answer.status_code == 201, answer.text
    return job_id


class TestJobQuota:
    def test_under_the_quota_is_accepted_and_past_it_refused_naming_it(
        self, gateway: GatewayServer
    ) -> None:
        user = new_user()
        quota = {"max_gpus": 3}
        submit(gateway, user, quota, gpu_count=2)
        refused_id = new_job_id()
        answer = gateway.http.post(
            "/v1/jobs",
            json=submit_body(refused_id, user_id=user, quota=quota, gpu_count=2),
        )
        error = quota_refusal(answer)
        assert (error["quota"], error["limit"], error["in_use"], error["asked"]) == (
            "max_gpus",
            3,
            2,
            2,
        )
        assert "max_gpus" in error["message"]
        with pytest.raises(NotFound):
            gateway.crd.get_job(refused_id)
        submit(gateway, user, quota, gpu_count=1)  # exactly at the quota

    def test_vram_quota_counts_every_gpu(self, gateway: GatewayServer) -> None:
        user = new_user()
        quota = {"max_vram_mb": 20_000}
        submit(gateway, user, quota, vram_mb=8192)
        answer = gateway.http.post(
            "/v1/jobs",
            json=submit_body(user_id=user, quota=quota, vram_mb=8192, gpu_count=2),
        )
        error = quota_refusal(answer)
        assert (error["quota"], error["limit"], error["in_use"], error["asked"]) == (
            "max_vram_mb",
            20_000,
            8192,
            16384,
        )

    def test_another_user_is_unaffected(self, gateway: GatewayServer) -> None:
        full, other = new_user(), new_user()
        submit(gateway, full, {"max_gpus": 1})
        quota_refusal(
            gateway.http.post("/v1/jobs", json=submit_body(user_id=full, quota={"max_gpus": 1}))
        )
        submit(gateway, other, {"max_gpus": 1})
        submit(gateway, other, None)  # no quota: no limit

    def test_a_finished_job_holds_nothing(self, gateway: GatewayServer) -> None:
        user = new_user()
        first = submit(gateway, user, {"max_gpus": 1})
        assert gateway.http.post(f"/v1/jobs/{first}/cancel").status_code == 200
        gateway.crd.get_job(first)
        # the informer brings the cancel back; until then the job still counts
        for _ in range(100):
            answer = gateway.http.post(
                "/v1/jobs", json=submit_body(user_id=user, quota={"max_gpus": 1})
            )
            if answer.status_code == 201:
                return
            quota_refusal(answer)
            asyncio.run(asyncio.sleep(0.1))
        raise AssertionError("the cancelled job still counted after 10 s")

    def test_racing_submissions_cannot_share_the_room(self, gateway: GatewayServer) -> None:
        user = new_user()

        async def race() -> list[int]:
            async with httpx.AsyncClient(base_url=gateway.url, headers=gateway.http.headers) as h:
                answers = await asyncio.gather(
                    *(
                        h.post("/v1/jobs", json=submit_body(user_id=user, quota={"max_gpus": 2}))
                        for _ in range(6)
                    )
                )
            return sorted(answer.status_code for answer in answers)

        assert asyncio.run(race()) == [201, 201, 429, 429, 429, 429]


class TestMapQuota:
    @staticmethod
    def worker(map_id: str, worker: int, workers: int, user: str, quota: dict[str, int]) -> Any:
        share = {
            "map_id": map_id,
            "worker": worker,
            "workers": workers,
            "items": 8,
            "chunk_items": 1,
        }
        body = submit_body(f"{map_id}-w{worker}", user_id=user, quota=quota, map=share)
        return body

    def test_a_map_is_checked_whole(self, gateway: GatewayServer) -> None:
        user = new_user()
        quota = {"max_gpus": 4}
        submit(gateway, user, quota)
        too_big = f"map-{uuid.uuid4().hex[:10]}"
        for worker in (0, 3):  # every worker answers the same: the whole map is past it
            answer = gateway.http.post(
                "/v1/jobs", json=self.worker(too_big, worker, 4, user, quota)
            )
            error = quota_refusal(answer)
            assert (error["in_use"], error["asked"]) == (1, 4)
        fits = f"map-{uuid.uuid4().hex[:10]}"
        for worker in range(3):  # the map's own workers never count against it
            answer = gateway.http.post("/v1/jobs", json=self.worker(fits, worker, 3, user, quota))
            assert answer.status_code == 201, answer.text
        quota_refusal(gateway.http.post("/v1/jobs", json=submit_body(user_id=user, quota=quota)))


class TestEndpointQuota:
    def test_an_endpoint_holds_its_replicas_vram(self, gateway: GatewayServer) -> None:
        user = new_user()
        quota = {"max_vram_mb": 4096}
        body = endpoint_body(
            new_endpoint_id(),
            user_id=user,
            quota=quota,
            max_replicas=3,
            vendor="amd",
            function_ref=REF,
        )
        answer = gateway.http.post("/v1/endpoints", json=body)
        assert answer.status_code == 201, answer.text  # 3 x 1024 MiB
        second = endpoint_body(
            new_endpoint_id(),
            user_id=user,
            quota=quota,
            max_replicas=2,
            vendor="amd",
            function_ref=REF,
        )
        error = quota_refusal(gateway.http.post("/v1/endpoints", json=second))
        assert (error["quota"], error["in_use"], error["asked"]) == ("max_vram_mb", 3072, 2048)
        job = gateway.http.post("/v1/jobs", json=submit_body(user_id=user, quota=quota))
        assert quota_refusal(job)["in_use"] == 3072

    def test_a_woken_endpoint_is_checked_and_counted(self, gateway: GatewayServer) -> None:
        """Waking an endpoint scaled to zero asks for its VRAM again: past the quota it is
        refused and stays Stopped; within it, what it asks counts while it waits."""
        user = new_user()
        body = {"user_id": user, "vendor": "amd", "function_ref": REF, "vram_mb": 2048}
        idle = new_endpoint_id()
        assert gateway.http.post("/v1/endpoints", json=endpoint_body(idle, **body)).is_success
        gateway.crd.set_endpoint_stopped(idle, "Idle", "no request")
        busy = new_endpoint_id()
        assert gateway.http.post("/v1/endpoints", json=endpoint_body(busy, **body)).is_success
        tight = {"quota": {"max_vram_mb": 3072}}
        error = quota_refusal(gateway.http.post(f"/v1/endpoints/{idle}/wake", json=tight))
        assert (error["quota"], error["in_use"], error["asked"]) == ("max_vram_mb", 2048, 2048)
        assert gateway.crd.get_endpoint(idle).status.reason == "Idle"  # not woken
        roomy = {"quota": {"max_vram_mb": 5120}}
        woken = gateway.http.post(f"/v1/endpoints/{idle}/wake", json=roomy)
        assert woken.status_code == 200, woken.text  # woken, waiting for a node
        again = gateway.http.post(f"/v1/endpoints/{idle}/wake", json=roomy)
        assert again.status_code == 200, again.text  # its own wake never counts against it
        third = endpoint_body(new_endpoint_id(), **body, quota=roomy["quota"])
        error = quota_refusal(gateway.http.post("/v1/endpoints", json=third))
        assert (error["in_use"], error["asked"]) == (4096, 2048)  # the woken one counts
        assert gateway.http.post(f"/v1/endpoints/{idle}/wake").status_code == 200  # no quota

    def test_an_endpoints_cpu_memory_and_gpu_model_are_checked_and_kept(
        self, gateway: GatewayServer
    ) -> None:
        body = {"user_id": new_user(), "vendor": "amd", "function_ref": REF}
        for field, value in (
            ("gpu_models", ["H100"]),
            ("memory_mb", 4_000_000),
            ("cpu_millis", 1_000_000),
        ):
            answer = gateway.http.post(
                "/v1/endpoints", json=endpoint_body(new_endpoint_id(), **body, **{field: value})
            )
            assert answer.status_code == 422, answer.text
            assert answer.json()["error"]["fields"][0]["field"] == field
        asked = {"gpu_models": ["MI250"], "memory_mb": 2048, "cpu_millis": 1500}
        created = create(gateway, **endpoint_body(new_endpoint_id(), **body, **asked))
        assert {key: created[key] for key in asked} == asked
        spec = gateway.crd.get_endpoint(created["id"]).spec
        assert (spec.gpu_models, spec.memory_mb, spec.cpu_millis) == (("MI250",), 2048, 1500)


class TestBadQuota:
    @pytest.mark.parametrize(
        ("quota", "field"),
        [
            ({"max_gpus": -1}, "quota.max_gpus"),
            ({"max_vram_mb": "lots"}, "quota.max_vram_mb"),
            ({"max_cpus": 1}, "quota.max_cpus"),
        ],
    )
    def test_named(self, gateway: GatewayServer, quota: dict[str, Any], field: str) -> None:
        answer = gateway.http.post("/v1/jobs", json=submit_body(quota=quota))
        assert answer.status_code == 422, answer.text
        assert field in [item["field"] for item in answer.json()["error"]["fields"]]


FULL_NODE = """
nodes:
  - name: gpu-f
    gpus:
"""
FULL_NODE += "".join(
    f"      - {{index: {i}, vendor: nvidia, model: NVIDIA A100 80GB, vram_mb: 81920}}\n"
    for i in range(3)
)


class TestSharesOrderTheQueue:
    @pytest.mark.parametrize(("weights", "first"), [({}, "heavy"), ({"light": 2.0}, "light")])
    def test_the_weight_decides_who_gets_the_last_gpu(
        self,
        kubeapi: KubeAPI,
        tmp_path_factory: pytest.TempPathFactory,
        weights: dict[str, float],
        first: str,
    ) -> None:
        """heavy and light hold a GPU each; heavy's waiting job is older. With equal weights
        the tie goes to it; light of weight 2 has half the share and goes first."""
        workdir = tmp_path_factory.mktemp("shares")
        with running_gateway(
            kubeapi, workdir, inventory_yaml=FULL_NODE, pass_interval_seconds=0.2
        ) as gw:

            def whole_gpu(user: str) -> str:
                body = submit_body(user_id=user, vendor="nvidia", vram_mb=81920)
                answer = gw.http.post("/v1/jobs", json=body)
                assert answer.status_code == 201, answer.text
                job_id: str = answer.json()["job_id"]
                return job_id

            for user in ("heavy", "light", "blocker"):
                gw.crd.wait_for_job(whole_gpu(user), {JobPhase.ALLOCATED}, timeout=30)
            blocker = gw.crd.list_jobs(user_id="blocker")[0].name
            assert gw.http.put("/v1/shares", json={"weights": weights}).status_code == 200
            waiting = {"heavy": whole_gpu("heavy")}
            time.sleep(1.1)  # creation times are whole seconds: heavy's is older
            waiting["light"] = whole_gpu("light")
            assert gw.http.post(f"/v1/jobs/{blocker}/cancel").status_code == 200
            wait_until(
                lambda: any(
                    gw.crd.get_job(job).phase is JobPhase.ALLOCATED for job in waiting.values()
                ),
                what="one waiting job placed",
            )
            phases = {user: gw.crd.get_job(job).phase for user, job in waiting.items()}
        second = "light" if first == "heavy" else "heavy"
        assert (phases[first], phases[second]) == (JobPhase.ALLOCATED, JobPhase.PENDING)


class TestShares:
    def test_weights_reach_the_scheduler(self, gateway: GatewayServer) -> None:
        answer = gateway.http.put("/v1/shares", json={"weights": {"alice": 2.0, "bob": 0.5}})
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"weights": {"alice": 2.0, "bob": 0.5}}
        assert gateway.http.get("/v1/shares").json() == {"weights": {"alice": 2.0, "bob": 0.5}}
        gateway.http.put("/v1/shares", json={"weights": {}})
        assert gateway.http.get("/v1/shares").json() == {"weights": {}}

    @pytest.mark.parametrize("weight", [0, -1, "heavy", 1e9])
    def test_a_bad_weight_is_named(self, gateway: GatewayServer, weight: Any) -> None:
        answer = gateway.http.put("/v1/shares", json={"weights": {"alice": weight}})
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"]["fields"][0]["field"] == "weights.alice"
