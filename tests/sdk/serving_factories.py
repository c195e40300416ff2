"""What the SDK's endpoint tests share: the real gateway serving endpoints on Ray Serve, and
a funded user configured as the SDK's user with the tests' classes pickled by value."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import cloudpickle
import httpx
import pytest

import gridweave as gw
from job_gateway.execution import ExecutionSettings
from job_gateway.sandbox.settings import SandboxSettings
from tests.job_gateway.execution_factories import INVENTORY_YAML, RayWorld
from tests.job_gateway.gateway_factories import GatewayServer, running_gateway
from tests.platform_service import endpoint_factories
from tests.platform_service.factories import PlatformServer, User
from tests.support.credentials import service_auth
from tests.support.credit_server import INTERNAL_TOKEN, CreditServer
from tests.support.http_server import free_port
from tests.support.kubeapi import KubeAPI
from tests.support.sandbox import sandbox_config

__all__ = ["executing_gateway", "sdk_user", "serving_gateway"]


@contextmanager
def serving_gateway(
    ray_world: RayWorld,
    kubeapi: KubeAPI,
    metering: httpx.Client,
    tmp_path_factory: pytest.TempPathFactory,
    *,
    name: str,
    environment: dict[str, str],
) -> Iterator[GatewayServer]:
    """The gateway executing on the session's Ray (``ray_world``) and serving endpoints on
    Ray Serve on a free port, with the ``GATEWAY_*`` settings of ``environment``."""
    del ray_world  # asked for so the session's Ray is up first
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GATEWAY_SERVE_PORT", str(free_port()))
        for setting, value in environment.items():
            patch.setenv(setting, value)
        with running_gateway(
            kubeapi,
            tmp_path_factory.mktemp(name),
            inventory_yaml=INVENTORY_YAML,
            execution=ExecutionSettings(executor_poll_seconds=0.05),
            **service_auth(INTERNAL_TOKEN),
            metering_service_url=str(metering.base_url),
        ) as server:
            yield server


@contextmanager
def executing_gateway(
    kubeapi: KubeAPI,
    metering: httpx.Client,
    workdir: Path,
    *,
    sandbox: SandboxSettings | None = None,
) -> Iterator[GatewayServer]:
    """The gateway executing jobs on the session's Ray (ask for ``ray_world`` first), in the
    node's default image (``sandbox``: other sandbox settings), reporting usage to
    ``metering``."""
    with running_gateway(
        kubeapi,
        workdir,
        inventory_yaml=INVENTORY_YAML,
        execution=ExecutionSettings(
            executor_poll_seconds=0.05,
            sandbox=sandbox or SandboxSettings(rootfs=sandbox_config().rootfs),
        ),
        **service_auth(INTERNAL_TOKEN),
        metering_service_url=str(metering.base_url),
    ) as server:
        yield server


@contextmanager
def sdk_user(platform: PlatformServer, credit: CreditServer, funds: int) -> Iterator[User]:
    """A user funded with ``funds`` as the SDK's user; the tests' classes pickled by value."""
    funded = platform.new_user()
    credit.fund(funded.user_id, funds)
    gw.configure(url=platform.url, api_key=funded.key)
    cloudpickle.register_pickle_by_value(endpoint_factories)
    try:
        yield funded
    finally:
        cloudpickle.unregister_pickle_by_value(endpoint_factories)
