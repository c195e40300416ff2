"""What the admins' commands and client methods are tested against, one of each per module: the
platform calling the real node registry (kuberay-service on PostgreSQL), a real gateway whose
inventory is that registry, and the real credit_service (``admin_platform``); and a platform
over a gateway whose inventory is a file, so its node was joined with no join key
(``file_platform``). A module imports the fixtures it uses, with ``node_registry`` and
``platform_database`` from ``tests.platform_service.conftest``."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from gridweave_clients.nodes import NodeRegistryClient
from job_gateway.inventory import NodeRegistrySource
from tests.job_gateway.gateway_factories import GatewayServer, running_gateway
from tests.kuberay_service.node_factories import Registry, node_headers, validate, validate_body
from tests.platform_service.factories import (
    NOWHERE,
    PlatformServer,
    platform_settings,
    running_platform,
)
from tests.support.credentials import service_auth
from tests.support.credit_server import INTERNAL_TOKEN, CreditServer
from tests.support.kubeapi import KubeAPI

__all__ = [
    "FILE_NODE",
    "MASTER",
    "admin_platform",
    "file_platform",
    "join_with",
    "registry_gateway",
    "schedulable_flags",
    "until_schedulable",
]

#: The URL a join command names (the platform's ``node_join_url``).
MASTER = "https://master.example:8800"
#: The one node of ``file_platform``'s gateway: listed there, unknown to the registry.
FILE_NODE = "file-node"
_FILE_INVENTORY = f"""
nodes:
  - name: {FILE_NODE}
    gpus:
      - {{index: 0, vendor: nvidia, model: NVIDIA A100 80GB, vram_mb: 81920}}
"""


@pytest.fixture(scope="module")
def registry_gateway(
    kubeapi: KubeAPI, node_registry: Registry, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayServer]:
    """The real gateway whose inventory is the registry's nodes, read again every 0.2 s."""
    source = NodeRegistrySource(NodeRegistryClient(node_registry.url, INTERNAL_TOKEN))
    with running_gateway(
        kubeapi,
        tmp_path_factory.mktemp("registry-gateway"),
        **service_auth(INTERNAL_TOKEN),
        metering_service_url=NOWHERE,
        inventory_source=source,
        inventory_refresh_seconds=0.2,
    ) as server:
        yield server


@pytest.fixture(scope="module")
def admin_platform(
    platform_database: str,
    node_registry: Registry,
    registry_gateway: GatewayServer,
    credit: CreditServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[PlatformServer]:
    """The platform over the registry, its gateway and credit_service."""
    settings = platform_settings(
        platform_database,
        tmp_path_factory.mktemp("admin-platform"),
        gateway_url=registry_gateway.url,
        kuberay_url=node_registry.url,
        credit_service_url=credit.url,
        node_join_url=MASTER,
    )
    with running_platform(settings) as server:
        yield server


@pytest.fixture(scope="module")
def file_platform(
    kubeapi: KubeAPI,
    platform_database: str,
    node_registry: Registry,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[PlatformServer]:
    """The platform over a gateway whose inventory is a file (its node is not in the
    registry), beside the real registry."""
    with running_gateway(
        kubeapi,
        tmp_path_factory.mktemp("file-gateway"),
        inventory_yaml=_FILE_INVENTORY,
        **service_auth(INTERNAL_TOKEN),
        metering_service_url=NOWHERE,
    ) as file_gateway:
        settings = platform_settings(
            platform_database,
            tmp_path_factory.mktemp("file-platform"),
            gateway_url=file_gateway.url,
            kuberay_url=node_registry.url,
        )
        with running_platform(settings) as server:
            yield server


def join_with(node_registry: Registry, join_key: str) -> str:
    """Join a machine with ``join_key`` as ``join-node.sh`` does (validate, then register,
    so the node is Ready): its name."""
    answer = validate(node_registry, validate_body(join_key))
    assert answer.status_code == 200, answer.text
    with node_registry.client(node_headers(answer.json()["node_token"])) as http:
        registered = http.post("/v1/nodes/register")
        assert registered.status_code == 200, registered.text
    name: str = answer.json()["name"]
    return name


def schedulable_flags(platform: PlatformServer, name: str) -> list[bool] | None:
    """The node's GPUs' schedulable flags as the gateway sees them (None: not listed)."""
    response = platform.http.get("/v1/nodes", headers=platform.admin.headers)
    assert response.status_code == 200, response.text
    for node in response.json()["nodes"]:
        if node["name"] == name:
            return [gpu["schedulable"] for gpu in node["gpus"]]
    return None


def until_schedulable(platform: PlatformServer, name: str, expected: bool) -> list[bool] | None:
    """The node's flags once every GPU is ``expected`` (or what they are after 20 s)."""
    deadline = time.monotonic() + 20
    seen = schedulable_flags(platform, name)
    while (not seen or set(seen) != {expected}) and time.monotonic() < deadline:
        time.sleep(0.1)
        seen = schedulable_flags(platform, name)
    return seen
