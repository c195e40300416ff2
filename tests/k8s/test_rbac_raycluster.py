"""k8s/rbac-raycluster.yaml: kuberay-service, as its ServiceAccount, keeps the worker groups
of a RayCluster (get, update) and can neither create nor delete one."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from gridweave_clients.nodes import NodeResponse
from gridweave_runtime.kubeapi import api_client_for
from kuberay_service.ray import RayClusterGroups, RayWorkerSync
from tests.k8s.test_rbac import _kubectl, applied, sa_kubeconfig
from tests.support.kubeapi import NAMESPACE, REPO_ROOT, KubeAPI
from tests.support.raycluster import RayClusterCrdUnavailable, install_raycluster_crd, raycluster
from tests.support.unavailable import fail_or_skip

__all__ = ["applied", "sa_kubeconfig"]  # the ServiceAccount's fixtures, shared

pytestmark = pytest.mark.kubeapi


@pytest.fixture(scope="module")
def service_account() -> str:
    """The ServiceAccount ``sa_kubeconfig`` acts as here: kuberay-service's, the one that
    keeps RayClusters' worker groups."""
    return "kuberay-service"


@pytest.fixture(scope="module")
def cluster_name(kubeapi: KubeAPI, applied: str) -> str:
    try:
        install_raycluster_crd(kubeapi)
    except RayClusterCrdUnavailable as exc:
        fail_or_skip("KubeRay CRD module", exc)
    manifest = REPO_ROOT / "k8s" / "rbac-raycluster.yaml"
    result = _kubectl(kubeapi.kubeconfig, "apply", "-f", str(manifest))
    assert result.returncode == 0, result.stderr
    name = f"rbac-{uuid.uuid4().hex[:8]}"
    with api_client_for(kubeapi.kubeconfig) as admin:
        client.CustomObjectsApi(admin).create_namespaced_custom_object(
            "ray.io", "v1", NAMESPACE, "rayclusters", raycluster(name, NAMESPACE)
        )
    return name


@pytest.fixture
def sa_api(sa_kubeconfig: Path) -> Iterator[client.ApiClient]:
    with api_client_for(sa_kubeconfig) as api_client:
        yield api_client


def test_the_service_account_keeps_worker_groups(
    sa_api: client.ApiClient, cluster_name: str
) -> None:
    node = NodeResponse.model_validate(
        {
            "name": "gpu-rbac",
            "status": "Ready",
            "gpus": [{"index": 0, "vendor": "nvidia", "model": "L4", "vram_mb": 23_034}],
        }
    )
    groups = RayClusterGroups(sa_api, namespace=NAMESPACE, name=cluster_name)
    assert RayWorkerSync(groups, lambda: [node], image="w:1").sync_once() == (1, 0)
    assert [g["groupName"] for g in groups.read()["spec"]["workerGroupSpecs"]] == [
        "cpu",
        "gw-gpu-rbac",
    ]


def test_it_cannot_create_or_delete_a_raycluster(
    sa_api: client.ApiClient, cluster_name: str
) -> None:
    api = client.CustomObjectsApi(sa_api)
    attempts: list[Callable[[], object]] = [
        lambda: api.create_namespaced_custom_object(
            "ray.io", "v1", NAMESPACE, "rayclusters", raycluster("other", NAMESPACE)
        ),
        lambda: api.delete_namespaced_custom_object(
            "ray.io", "v1", NAMESPACE, "rayclusters", cluster_name
        ),
    ]
    for attempt in attempts:
        with pytest.raises(ApiException) as refused:
            attempt()
        assert refused.value.status == 403
