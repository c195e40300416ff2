"""The registry tests' stack: the platform on PostgreSQL (no other service: the registry
needs only its tokens, events and quotas) and one real registry per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from registry_service.supervisor import RegistrySupervisor
from tests.platform_service.factories import PlatformServer, platform_settings, running_platform
from tests.registry_service.factories import (
    RegistryToolsUnavailable,
    client_binaries,
    registry_binary,
    registry_settings,
    running_registry,
)
from tests.support.postgres import PostgresTestServer
from tests.support.unavailable import fail_or_skip


@pytest.fixture(scope="module")
def registry_tools() -> None:
    """The registry and crane/oras built (or the module skipped, failed under CI)."""
    try:
        registry_binary()
        client_binaries()
    except RegistryToolsUnavailable as exc:
        fail_or_skip("the image registry", exc)


@pytest.fixture(scope="module")
def platform(
    postgres: PostgresTestServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PlatformServer]:
    """The platform alone: users, keys, registry tokens and quotas."""
    url = postgres.create_database("gwplatform")
    settings = platform_settings(url, tmp_path_factory.mktemp("platform"))
    try:
        with running_platform(settings) as server:
            yield server
    finally:
        postgres.drop_database(url)


@pytest.fixture(scope="module")
def registry(
    registry_tools: None, platform: PlatformServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RegistrySupervisor]:
    """A real registry taking its tokens from the platform."""
    settings = registry_settings(platform.url, tmp_path_factory.mktemp("registry"))
    with running_registry(settings) as supervisor:
        yield supervisor
