"""The endpoint tests' Serve and gateway: one of each per test module (module scope), on
the session's three-node Ray and the real apiserver."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from job_gateway.endpoints import EndpointSettings
from job_gateway.execution import ExecutionSettings
from job_gateway.sandbox.settings import SandboxSettings
from tests.job_gateway.endpoints.factories import free_port
from tests.job_gateway.execution_factories import INVENTORY_YAML, RayWorld
from tests.job_gateway.gateway_factories import GatewayServer, running_gateway
from tests.support.kubeapi import KubeAPI


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
def sandbox_settings() -> SandboxSettings | None:
    """The nodes' sandbox the module's gateway runs endpoints in (None: GATEWAY_SANDBOX_*'s);
    a module overrides it to give its own."""
    return None


@pytest.fixture(scope="module")
def gateway(
    serve_port: int,
    kubeapi: KubeAPI,
    tmp_path_factory: pytest.TempPathFactory,
    sandbox_settings: SandboxSettings | None,
) -> Iterator[GatewayServer]:
    """The gateway with execution on: it places, deploys and probes endpoints."""
    with running_gateway(
        kubeapi,
        tmp_path_factory.mktemp("endpoints"),
        inventory_yaml=INVENTORY_YAML,
        execution=ExecutionSettings(
            executor_poll_seconds=0.05,
            warm_spares_per_node=0,
            sandbox=sandbox_settings or SandboxSettings(),
        ),
        endpoint_settings=EndpointSettings(
            serve_port=serve_port,
            endpoint_probe_seconds=0.5,
            endpoint_probe_timeout_seconds=1.0,
            endpoint_deploy_timeout_seconds=240,
        ),
        pass_interval_seconds=0.5,
    ) as server:
        yield server
