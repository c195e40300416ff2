"""The SDK's tests: the whole platform stack of the platform tests, and a clean configuration.

Every test starts with no ``gw.configure()`` override, no ``GRIDWEAVE_*`` variable and a
config file path of its own, so nothing of the developer's machine leaks in.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.platform_service.conftest import (  # noqa: F401  (the whole stack, as fixtures)
    chain,
    chain_database,
    faucet,
    gateway,
    metering,
    node_registry,
    platform,
    platform_database,
    platform_prometheus_url,
)


@pytest.fixture(autouse=True)
def clean_configuration(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No override, no environment; ``GRIDWEAVE_CONFIG`` points at a file not yet written."""
    monkeypatch.setattr("gridweave._config._overrides", {})
    monkeypatch.delenv("GRIDWEAVE_URL", raising=False)
    monkeypatch.delenv("GRIDWEAVE_API_KEY", raising=False)
    path = tmp_path / "gridweave" / "config.toml"
    monkeypatch.setenv("GRIDWEAVE_CONFIG", str(path))
    return path
