"""What the CLI's tests share: running a command line and reading its output."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from typer.testing import Result

from tests.platform_service.factories import PlatformServer, User

__all__ = ["Invoke", "as_user", "json_of"]

#: ``gridweave(*args, input=None)``: the ``gridweave`` fixture.
Invoke = Callable[..., Result]


def as_user(monkeypatch: pytest.MonkeyPatch, server: PlatformServer, user: User) -> None:
    """Point the commands at ``server`` with ``user``'s key (through the environment)."""
    monkeypatch.setenv("GRIDWEAVE_URL", server.url)
    monkeypatch.setenv("GRIDWEAVE_API_KEY", user.key)


def json_of(result: Result) -> Any:
    """stdout of a ``--json`` command: exactly one JSON document."""
    assert result.exit_code == 0, (result.exit_code, result.output)
    return json.loads(result.stdout)
