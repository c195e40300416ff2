"""chain_service on a real PostgreSQL over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from chain_service.node import LocalNode
from chain_service.signing import SigningKey, load_signing_key
from tests.chain_service.factories import chain_settings, running_chain
from tests.support.cometbft import single_node, started_or_skip
from tests.support.postgres import PostgresTestServer


@pytest.fixture
def chain_database(postgres: PostgresTestServer) -> Iterator[str]:
    """An empty database for chain_service, one per test (chains start at seq 1)."""
    with postgres.database("gwchain") as url:
        yield url


@pytest.fixture
def chain(chain_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """The real chain_service on its own fresh database (migrated from empty)."""
    settings = chain_settings(chain_database, tmp_path_factory.mktemp("chain"))
    with running_chain(settings) as client:
        yield client


@pytest.fixture
def signing_key(tmp_path: Path) -> SigningKey:
    """chain_service's key (``tmp_path / "signing.pem"``), made before the node that must
    trust it."""
    return load_signing_key(tmp_path / "signing.pem")


@pytest.fixture
def node(tmp_path: Path, signing_key: SigningKey) -> Iterator[LocalNode]:
    """A real single-node CometBFT trusting ``signing_key``."""
    with started_or_skip(single_node(tmp_path / "node", signing_key.public_key_hex)) as started:
        yield started
