"""The CLI's tests: ``gridweave`` commands run with typer's ``CliRunner`` against the whole
platform stack, with the SDK tests' clean configuration (no override, no ``GRIDWEAVE_*``
variable, a config file path of each test's own) and wide, plain tables.
"""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner, Result

from gridweave_cli.app import app
from tests.cli.helpers import Invoke
from tests.platform_service.admin_stack import (  # noqa: F401  (the admins' stack)
    admin_platform,
    file_platform,
    registry_gateway,
)
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
from tests.sdk.conftest import clean_configuration  # noqa: F401  (autouse)


@pytest.fixture(autouse=True)
def plain_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables unwrapped (so their text can be read) and no debug tracebacks."""
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("GRIDWEAVE_DEBUG", raising=False)


@pytest.fixture
def gridweave() -> Invoke:
    """``gridweave(*args, input=None)``: run the command line, return typer's result."""
    runner = CliRunner()

    def invoke(*args: str, input: Any = None) -> Result:
        return runner.invoke(app, list(args), input=input, catch_exceptions=False)

    return invoke
