"""The CLI's tests: ``gridweave`` commands run with typer's ``CliRunner`` against the whole
platform stack of the platform tests, with a configuration of their own.

Every test starts with no ``gw.configure()`` override, no ``GRIDWEAVE_*`` variable and a
config file path of its own, so nothing of the developer's machine leaks in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from gridweave_cli.app import app
from tests.cli.helpers import Invoke
from tests.platform_service.conftest import (  # noqa: F401  (the whole stack, as fixtures)
    chain,
    chain_database,
    faucet,
    gateway,
    metering,
    platform,
    platform_database,
)


@pytest.fixture(autouse=True)
def clean_configuration(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No override, no environment; ``GRIDWEAVE_CONFIG`` points at a file not yet written."""
    monkeypatch.setattr("gridweave._config._overrides", {})
    for name in ("GRIDWEAVE_URL", "GRIDWEAVE_API_KEY", "GRIDWEAVE_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "200")  # tables unwrapped, so their text can be read
    path = tmp_path / "gridweave" / "config.toml"
    monkeypatch.setenv("GRIDWEAVE_CONFIG", str(path))
    return path


@pytest.fixture
def gridweave() -> Invoke:
    """``gridweave(*args, input=None)``: run the command line, return typer's result."""
    runner = CliRunner()

    def invoke(*args: str, input: Any = None) -> Result:
        return runner.invoke(app, list(args), input=input, catch_exceptions=False)

    return invoke
