"""Endpoints served on real Ray Serve (CPU): the gateway's API, its reconciler, the replicas.

One Serve instance and one gateway for the module (Serve on the session's three-node Ray,
the real apiserver); each test makes its own endpoints.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from job_gateway.endpoints import EndpointSettings
from job_gateway.execution import ExecutionSettings
from tests.job_gateway.endpoints import serve_classes
from tests.job_gateway.endpoints.factories import (
    create,
    endpoint_body,
    free_port,
    new_endpoint_id,
    pickled_class,
    wait_for,
    wait_running,
)
from tests.job_gateway.execution_factories import INVENTORY_YAML, RayWorld
from tests.job_gateway.gateway_factories import GatewayServer, running_gateway
from tests.support.kubeapi import KubeAPI

pytestmark = pytest.mark.kubeapi


@pytest.fixture(scope="module")
def serve_port(ray_world: RayWorld) -> Iterator[int]:
    """Serve on the session's Ray for this module, stopped after it."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from ray import serve

    port = free_port()
    serve.start(proxy_location="HeadOnly", http_options={"host": "127.0.0.1", "port": port})
    try:
        yield port
    finally:
        serve.shutdown()  # type: ignore[no-untyped-call]


@pytest.fixture(scope="module")
def gateway(
    serve_port: int, kubeapi: KubeAPI, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayServer]:
    """The gateway with execution on: it places, deploys and probes endpoints."""
    with running_gateway(
        kubeapi,
        tmp_path_factory.mktemp("endpoints"),
        inventory_yaml=INVENTORY_YAML,
        execution=ExecutionSettings(executor_poll_seconds=0.05, warm_spares_per_node=0),
        endpoint_settings=EndpointSettings(
            serve_port=serve_port, endpoint_probe_seconds=0.5, endpoint_deploy_timeout_seconds=240
        ),
        pass_interval_seconds=0.5,
    ) as server:
        yield server


def custom_endpoint(
    gateway: GatewayServer, cls: type = serve_classes.Greeter, **body: object
) -> str:
    endpoint_id = new_endpoint_id()
    function_ref = pickled_class(gateway, cls, endpoint_id)
    create(gateway, **endpoint_body(endpoint_id, function_ref=function_ref, **body))
    return endpoint_id


class TestCustomEndpoint:
    def test_public_methods_are_routes_on_the_placed_gpus(
        self, gateway: GatewayServer, ray_world: RayWorld
    ) -> None:
        endpoint_id = custom_endpoint(gateway, vendor="amd", vram_mb=4096)
        view = wait_running(gateway, endpoint_id)
        assert view["node"] == "node-b" and len(view["gpu_indices"]) == 1
        assert view["url"].endswith(f"/gw/{endpoint_id}")
        url = view["url"]
        assert httpx.post(f"{url}/greet", json={"name": "ada"}).json() == "hello ada"
        assert httpx.post(f"{url}/add", json=[2, 3]).json() == 5
        where = httpx.post(f"{url}/where").json()
        assert where["ray_node_id"] == ray_world.node_ids["node-b"]
        assert where["HIP_VISIBLE_DEVICES"] == str(view["gpu_indices"][0])
        assert where["CUDA_VISIBLE_DEVICES"] is None
        failed = httpx.post(f"{url}/fail")
        assert failed.status_code == 500
        assert failed.json()["error"] == {"type": "ValueError", "message": "refused on purpose"}
        assert httpx.post(f"{url}/_private").status_code == 404
        assert httpx.get(f"{url}/greet").status_code == 405
        healthy = wait_for(gateway, endpoint_id, lambda v: v["health"] == "Healthy")
        assert healthy["ready_replicas"] == 1
