"""The platform's own database and the real services it calls, one of each per test module.

Each fixture starts only what a module asks for: credit_service (``credit``, from
``tests.support.credit_server``), metering, the faucet and chain_service (``chain``, its
batches sealed only when a test asks; metering's receipt deliverer, a process of its own
beside metering, delivers the receipts there) and
kuberay-service's node registry (``node_registry``) on PostgreSQL, the gateway on the real
apiserver. ``platform`` is the platform calling all of them; a
module needing less defines its own.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.chain_service.factories import chain_settings, running_chain
from tests.faucet_service.factories import faucet_settings, running_faucet
from tests.job_gateway.gateway_factories import GatewayServer, running_gateway
from tests.kuberay_service.node_factories import Registry, serve_registry
from tests.metering_service.factories import (
    metering_settings,
    running_metering_and_deliverer,
)
from tests.platform_service.admin_stack import (  # noqa: F401  (the admins' stack)
    admin_platform,
    file_platform,
    registry_gateway,
)
from tests.platform_service.factories import (
    MAX_SUBMISSION,
    PlatformServer,
    platform_settings,
    running_platform,
)
from tests.support.credentials import service_auth
from tests.support.credit_server import INTERNAL_TOKEN, CreditServer
from tests.support.kubeapi import KubeAPI
from tests.support.postgres import PostgresTestServer


@pytest.fixture(scope="module")
def platform_database(postgres: PostgresTestServer) -> Iterator[str]:
    """An empty database for platform_service, shared by one test module."""
    with postgres.database("gwplatform") as url:
        yield url


@pytest.fixture(scope="module")
def gateway(
    kubeapi: KubeAPI, metering: httpx.Client, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[GatewayServer]:
    """The real gateway (the tests' inventory: two A100 80GB, one MI250 on a NotReady node),
    reporting finished jobs' usage to the real metering_service."""
    workdir = tmp_path_factory.mktemp("gateway")
    with running_gateway(
        kubeapi,
        workdir,
        **service_auth(INTERNAL_TOKEN),
        metering_service_url=str(metering.base_url),
    ) as server:
        yield server


@pytest.fixture(scope="module")
def node_registry(postgres: PostgresTestServer) -> Iterator[Registry]:
    """The real kuberay-service with its node registry (join keys, nodes) on PostgreSQL."""
    with (
        postgres.database("gwkuberay") as url,
        serve_registry(url, **service_auth(INTERNAL_TOKEN)) as served,
    ):
        yield served


@pytest.fixture(scope="module")
def chain_database(postgres: PostgresTestServer) -> Iterator[str]:
    """An empty database for chain_service, shared by one test module."""
    with postgres.database("gwchain") as url:
        yield url


@pytest.fixture(scope="module")
def chain(chain_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """The real chain_service (a batch is sealed when a test posts ``/v1/batches``)."""
    settings = chain_settings(chain_database, tmp_path_factory.mktemp("chain"))
    with running_chain(settings) as client:
        yield client


@pytest.fixture(scope="module")
def metering(
    postgres: PostgresTestServer,
    credit: CreditServer,
    chain: httpx.Client,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[httpx.Client]:
    """The real metering_service, settling through the real credit_service, and its receipt
    deliverer (``python -m metering_service.deliverer``) sending each settlement's receipt
    to the real chain_service."""
    url = postgres.create_database("gwmetering")
    state = tmp_path_factory.mktemp("metering")
    settings = metering_settings(url, credit.url, state_dir=state)
    try:
        with running_metering_and_deliverer(
            settings,
            str(chain.base_url),
            log=state / "deliverer.log",
            poll_seconds=0.05,
            retry_seconds=0.05,
        ) as client:
            yield client
    finally:
        postgres.drop_database(url)


@pytest.fixture(scope="module")
def faucet(
    postgres: PostgresTestServer, credit: CreditServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[httpx.Client]:
    """The real faucet_service minting through the real credit_service."""
    with postgres.database("gwfaucet") as url:
        settings = faucet_settings(url, credit.url, state_dir=tmp_path_factory.mktemp("faucet"))
        with running_faucet(settings) as client:
            yield client


@pytest.fixture(scope="module")
def faucet_platform(
    platform_database: str,
    credit: CreditServer,
    faucet: httpx.Client,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[PlatformServer]:
    """The platform calling only the faucet and credit_service (sign-up, sessions, the
    dashboard's proxy): a module uses it as its ``platform``."""
    settings = platform_settings(
        platform_database,
        tmp_path_factory.mktemp("platform"),
        credit_service_url=credit.url,
        faucet_service_url=str(faucet.base_url),
    )
    with running_platform(settings) as server:
        yield server


@pytest.fixture(scope="module")
def platform_prometheus_url() -> str | None:
    """The Prometheus the platform's console reads: none (its route answers 503), unless a
    module overrides this fixture."""
    return None


@pytest.fixture(scope="module")
def platform(
    platform_prometheus_url: str | None,
    platform_database: str,
    credit: CreditServer,
    gateway: GatewayServer,
    metering: httpx.Client,
    faucet: httpx.Client,
    chain: httpx.Client,
    node_registry: Registry,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[PlatformServer]:
    """The platform calling every real service, on the gateway's object store."""
    settings = platform_settings(
        platform_database,
        tmp_path_factory.mktemp("platform"),
        credit_service_url=credit.url,
        gateway_url=gateway.url,
        metering_service_url=str(metering.base_url),
        faucet_service_url=str(faucet.base_url),
        chain_service_url=str(chain.base_url),
        kuberay_url=node_registry.url,
        storage_dir=gateway.storage_dir,
        max_submission_bytes=MAX_SUBMISSION,
        prometheus_url=platform_prometheus_url,
    )
    with running_platform(settings) as server:
        yield server


@pytest.fixture(scope="module")
def lone_platform(
    platform_database: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PlatformServer]:
    """The platform alone, for routes that call no other service."""
    settings = platform_settings(platform_database, tmp_path_factory.mktemp("lone-platform"))
    with running_platform(settings) as server:
        yield server
