"""A joined node's Ray worker group in a RayCluster on the real Kubernetes API server, with
the RayCluster CRD of the pinned KubeRay module (its schema keeps every field we write)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s_client

from gridweave_clients.nodes import NodeResponse
from gridweave_runtime.kubeapi import api_client_for
from kuberay_service.ray import RayClusterGroups, RayWorkerSync, group_name
from kuberay_service.reconciler import Reconciler
from tests.kuberay_service.node_factories import (
    converges,
    create_key,
    gpu,
    node_headers,
    serve_registry,
    validate,
    validate_body,
)
from tests.support.kubeapi import KubeAPI
from tests.support.raycluster import RayClusterCrdUnavailable, install_raycluster_crd, raycluster
from tests.support.unavailable import fail_or_skip

IMAGE = "registry.local:30500/gridweave/ray-worker:latest"

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]


@pytest.fixture(scope="module")
def ray_crd(kubeapi: KubeAPI) -> KubeAPI:
    try:
        install_raycluster_crd(kubeapi)
    except RayClusterCrdUnavailable as exc:
        fail_or_skip("KubeRay CRD module", exc)
    return kubeapi


@pytest.fixture
def groups(ray_crd: KubeAPI, kube_namespace: str) -> Iterator[RayClusterGroups]:
    with api_client_for(ray_crd.kubeconfig) as api_client:
        k8s_client.CustomObjectsApi(api_client).create_namespaced_custom_object(
            "ray.io", "v1", kube_namespace, "rayclusters", raycluster("gpus", kube_namespace)
        )
        yield RayClusterGroups(api_client, namespace=kube_namespace, name="gpus")


def _node(name: str, gpus: list[dict[str, Any]]) -> NodeResponse:
    return NodeResponse.model_validate(
        {"name": name, "status": "Ready", "gpus": gpus, "joined_at": "2026-01-01T00:00:00Z"}
    )


def _groups(groups: RayClusterGroups) -> dict[str, dict[str, Any]]:
    spec = groups.read()["spec"]
    return {group["groupName"]: group for group in spec["workerGroupSpecs"]}


MIXED = _node("gpu-a.lab", [gpu(0), gpu(1, "amd", "AMD Instinct MI300X", 196_608), gpu(2)])
SMALL = _node("gpu-b", [gpu(0, model="NVIDIA L4", vram_mb=23_034)])


class TestWorkerGroups:
    def test_one_group_per_joined_node_others_kept(self, groups: RayClusterGroups) -> None:
        joined = [MIXED, SMALL]
        sync = RayWorkerSync(groups, lambda: joined, image=IMAGE)
        assert sync.sync_once() == (2, 0)
        stored = _groups(groups)
        assert list(stored) == ["cpu", "gw-gpu-a-lab", "gw-gpu-b"]
        mixed = stored["gw-gpu-a-lab"]
        assert (mixed["replicas"], mixed["minReplicas"], mixed["maxReplicas"]) == (1, 1, 1)
        assert mixed["resources"] == {"GPU": "3"}  # Ray's GPU resource: all of them
        assert mixed["labels"] == {"gridweave.io/node": "gpu-a.lab"}  # the Ray node label
        pod = mixed["template"]["spec"]
        assert pod["nodeSelector"] == {"gridweave.io/node": "gpu-a.lab"}
        (container,) = pod["containers"]
        assert container["image"] == IMAGE
        assert container["resources"]["limits"] == {"amd.com/gpu": "1", "nvidia.com/gpu": "2"}
        assert {"name": "CUDA_DEVICE_ORDER", "value": "PCI_BUS_ID"} in container["env"]
        assert stored["gw-gpu-b"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {
            "nvidia.com/gpu": "1"
        }
        assert sync.sync_once() == (0, 0)  # nothing to write: no write made

        joined = [SMALL]  # gpu-a.lab left
        assert sync.sync_once() == (0, 1)
        assert list(_groups(groups)) == ["cpu", "gw-gpu-b"]

    def test_a_concurrent_writer_is_never_overwritten(self, groups: RayClusterGroups) -> None:
        writes = 0

        def change(current: list[dict[str, Any]]) -> list[dict[str, Any]]:
            nonlocal writes
            if writes == 0:  # another writer scales the cpu group meanwhile
                writes += 1
                cluster = groups.read()
                cluster["spec"]["workerGroupSpecs"][0]["replicas"] = 3
                groups.api.replace_namespaced_custom_object(
                    "ray.io", "v1", groups.namespace, "rayclusters", groups.name, cluster
                )
            updated = copy.deepcopy(current)
            updated.append({**current[0], "groupName": "gw-x"})
            return updated

        before, after = groups.update(change)
        stored = _groups(groups)
        assert before[0]["replicas"] == 3 and stored["cpu"]["replicas"] == 3
        assert list(stored) == ["cpu", "gw-x"] == [g["groupName"] for g in after]

    def test_long_names_stay_short_and_distinct(self) -> None:
        long_a, long_b = "a" * 70 + ".x", "a" * 70 + ".y"
        assert len(group_name(long_a)) <= 48 and group_name(long_a) != group_name(long_b)


class TestTheServiceKeepsThem:
    def test_register_adds_the_group_and_leave_removes_it(
        self, groups: RayClusterGroups, ray_crd: KubeAPI, database: str
    ) -> None:
        with serve_registry(
            database,
            ray_cluster="gpus",
            namespace=groups.namespace,
            kubeconfig=ray_crd.kubeconfig,
            ray_worker_image=IMAGE,
        ) as registry:
            ray: Reconciler | None = registry.app.state.node_sync.ray
            assert ray is not None
            body = validate_body(create_key(registry)["key"], gpus=[gpu(0), gpu(1)])
            token = validate(registry, body).json()["node_token"]
            group = group_name(body["hostname"])
            with registry.client(node_headers(token)) as http:
                assert http.post("/v1/nodes/register").status_code == 200
                assert converges(ray, lambda: group in _groups(groups))
                assert _groups(groups)[group]["resources"] == {"GPU": "2"}
                assert http.post("/v1/nodes/leave").status_code == 204
            assert converges(ray, lambda: group not in _groups(groups))
            assert "cpu" in _groups(groups)
