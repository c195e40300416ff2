"""``GET /v1/inventory``: each GPU's held VRAM, what holds it (the allocation map built from
the CRDs on the real Kubernetes API, with each holder's user) and the VRAM measured in use,
null where nothing measured it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gridweave_controller import EndpointPhase, JobPhase
from job_gateway.inventory import Gpu, Inventory, Node
from job_gateway.scheduler import AllocationMap
from job_gateway.scheduler.types import Allocation
from job_gateway.services.inventory import inventory_response
from tests.job_gateway.gateway_factories import GatewayServer, running_gateway, submit_body
from tests.support.kubeapi import KubeAPI
from tests.support.waiting import wait_until

A100 = "NVIDIA A100 80GB"


def _gpu(answer: dict[str, Any], node: str, index: int) -> dict[str, Any]:
    listed = next(n for n in answer["nodes"] if n["name"] == node)
    gpu: dict[str, Any] = next(g for g in listed["gpus"] if g["index"] == index)
    return gpu


def _inventory(gateway: GatewayServer) -> dict[str, Any]:
    response = gateway.http.get("/v1/inventory")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


@pytest.mark.kubeapi
class TestInventoryRoute:
    def test_each_gpu_lists_the_jobs_and_endpoints_holding_it(
        self, kubeapi: KubeAPI, tmp_path: Path
    ) -> None:
        with running_gateway(kubeapi, tmp_path, pass_interval_seconds=0.2) as gateway:
            job_id = gateway.http.post(
                "/v1/jobs",
                json=submit_body(vendor="nvidia", vram_mb=8192, gpu_count=2, owner="team-9"),
            ).json()["job_id"]
            gateway.crd.wait_for_job(job_id, {JobPhase.ALLOCATED}, timeout=30)
            endpoint = gateway.crd.create_endpoint(
                "ep-shared", "bob", vram_mb=10_000, vendor="nvidia", function_ref="fn/ep.pkl"
            ).name
            wait_until(
                lambda: gateway.crd.get_endpoint(endpoint).phase is EndpointPhase.DEPLOYING,
                what="the endpoint placed",
            )
            placed = gateway.crd.get_endpoint(endpoint).status
            assert placed.node == "gpu-a"
            (shared,) = placed.gpu_indices
            wait_until(
                lambda: len(_gpu(_inventory(gateway), "gpu-a", shared)["allocations"]) == 2,
                what="both holders listed",
            )
            answer = _inventory(gateway)

        gpu = _gpu(answer, "gpu-a", shared)
        assert gpu["allocations"] == [  # largest first
            {
                "kind": "endpoint",
                "name": "ep-shared",
                "display_name": None,  # the gateway knows endpoints by id; the platform names them
                "user_id": "bob",
                "owner": "bob",
                "vram_mb": 10_000,
            },
            {
                "kind": "job",
                "name": job_id,
                "display_name": None,
                "user_id": "alice",
                "owner": "team-9",
                "vram_mb": 8192,
            },
        ]
        assert (gpu["held_mb"], gpu["free_mb"]) == (18_192, 81_920 - 18_192)
        assert sum(a["vram_mb"] for a in gpu["allocations"]) == gpu["held_mb"]
        other = _gpu(answer, "gpu-a", 1 - shared)
        assert [(a["kind"], a["name"]) for a in other["allocations"]] == [("job", job_id)]
        assert other["held_mb"] == 8192
        assert _gpu(answer, "gpu-b", 0)["allocations"] == []
        # declared GPUs: nothing measured them, so nothing is said
        assert {g["used_mb"] for n in answer["nodes"] for g in n["gpus"]} == {None}


CAPACITY_YAML = """
nodes:
  - name: big
    cpu_millis: 16000
    memory_mb: 65536
    gpus:
      - {index: 0, vendor: nvidia, model: NVIDIA A100 80GB, vram_mb: 81920}
      - {index: 1, vendor: nvidia, model: NVIDIA A100 80GB, vram_mb: 81920}
  - name: bare
    gpus:
      - {index: 0, vendor: amd, model: AMD Instinct MI250, vram_mb: 65536}
"""


@pytest.mark.kubeapi
class TestNodeCapacityRoute:
    def test_each_node_answers_its_cpu_and_memory_held_and_free(
        self, kubeapi: KubeAPI, tmp_path: Path
    ) -> None:
        with running_gateway(
            kubeapi, tmp_path, inventory_yaml=CAPACITY_YAML, pass_interval_seconds=0.2
        ) as gateway:
            body = submit_body(vendor="nvidia", vram_mb=8192, cpu_millis=2500, memory_mb=12288)
            job_id = gateway.http.post("/v1/jobs", json=body).json()["job_id"]
            gateway.crd.wait_for_job(job_id, {JobPhase.ALLOCATED}, timeout=30)
            wait_until(
                lambda: _node(_inventory(gateway), "big")["cpu_held_millis"] == 2500,
                what="the job's CPU held",
            )
            answer = _inventory(gateway)
        big, bare = _node(answer, "big"), _node(answer, "bare")
        assert {key: big[key] for key in big if key != "gpus"} == {
            "name": "big",
            "ready": True,
            "cpu_millis": 16000,
            "cpu_held_millis": 2500,
            "cpu_free_millis": 13500,
            "memory_mb": 65536,
            "memory_held_mb": 12288,
            "memory_free_mb": 53248,
        }
        # declares neither: no limit, said as null
        assert (bare["cpu_millis"], bare["cpu_free_millis"]) == (None, None)
        assert (bare["memory_mb"], bare["memory_free_mb"]) == (None, None)


def _node(answer: dict[str, Any], name: str) -> dict[str, Any]:
    node: dict[str, Any] = next(n for n in answer["nodes"] if n["name"] == name)
    return node


def _measured(used_mb: int | None, **fields: Any) -> Inventory:
    gpu = Gpu(node="n1", index=0, vendor="nvidia", model=A100, vram_mb=81_920, used_mb=used_mb)
    return Inventory(nodes=(Node(name="n1", gpus=(gpu,), **fields),))


class TestInventoryResponse:
    def test_the_measured_use_is_carried_and_a_holder_not_yet_seen_has_no_user(self) -> None:
        allocations = AllocationMap()
        allocations.put(Allocation("job", "job-new", "n1", (0,), 4096, provisional=True))
        answer = inventory_response(_measured(30_000), allocations)
        (gpu,) = answer.nodes[0].gpus
        assert (gpu.used_mb, gpu.held_mb, gpu.free_mb) == (30_000, 4096, 77_824)
        assert [(a.name, a.user_id, a.owner) for a in gpu.allocations] == [("job-new", None, None)]

    def test_a_nodes_free_cpu_and_memory_never_go_below_zero(self) -> None:
        allocations = AllocationMap()
        allocations.put(Allocation("job", "j1", "n1", (0,), 4096, cpu_millis=3000, memory_mb=9000))
        inventory = _measured(None, cpu_millis=2000, memory_mb=16_384)
        (node,) = inventory_response(inventory, allocations).nodes
        assert (node.cpu_held_millis, node.cpu_free_millis) == (3000, 0)
        assert (node.memory_held_mb, node.memory_free_mb) == (9000, 7384)

    def test_not_measured_is_null(self) -> None:
        (gpu,) = inventory_response(_measured(None), AllocationMap()).nodes[0].gpus
        assert gpu.used_mb is None and gpu.allocations == []


class TestSameCapacity:
    def test_a_new_reading_is_the_same_capacity_and_a_readiness_change_is_not(self) -> None:
        assert _measured(1000).same_capacity(_measured(52_000))
        assert _measured(1000) != _measured(52_000)  # the new reading is still taken
        assert not _measured(1000).same_capacity(_measured(1000, ready=False))
