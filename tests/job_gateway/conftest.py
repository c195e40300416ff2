"""The job gateway tests' shared servers: metering (the session's Ray: ``ray_world``, in
``tests.support.ray_fixtures``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gridweave_controller import CrdClient
from gridweave_runtime.storage import LocalObjectStore, StorageConfig
from tests.job_gateway.gateway_factories import blocking_crd
from tests.job_gateway.metering_factories import Metering
from tests.metering_service.factories import metering_settings, running_metering
from tests.support.credit_server import CreditServer
from tests.support.kubeapi import KubeAPI
from tests.support.postgres import PostgresTestServer


@pytest.fixture(scope="module")
def metering(
    postgres: PostgresTestServer, credit: CreditServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Metering]:
    """metering_service on its own database, settling with the real credit_service."""
    database = postgres.create_database("gwmetering")
    settings = metering_settings(
        database, credit.url, state_dir=tmp_path_factory.mktemp("metering")
    )
    try:
        with running_metering(settings) as http:
            yield Metering(http, settings, credit, database)
    finally:
        postgres.drop_database(database)


@pytest.fixture
def crd(kubeapi: KubeAPI, kube_namespace: str) -> Iterator[CrdClient]:
    """The tests' own blocking client on the test's namespace."""
    with blocking_crd(kubeapi.kubeconfig, kube_namespace) as client:
        yield client


@pytest.fixture
def storage(tmp_path: Path) -> StorageConfig:
    """A local object store of the test's own (``tmp_path / "objects"``)."""
    return StorageConfig(root=str(tmp_path / "objects"))


@pytest.fixture
def store(storage: StorageConfig) -> LocalObjectStore:
    """The object store ``storage`` names, as the tests read and write it."""
    return LocalObjectStore(storage.root)
