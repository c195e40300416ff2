"""The platform client of a command, from the configuration the SDK reads."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import typer

import gridweave as gw
from gridweave_cli._errors import CliError
from gridweave_cli.exit_codes import ExitCode
from gridweave_clients.platform import PlatformClient

__all__ = [
    "CLIENT_TIMEOUT_SECONDS",
    "checked_url",
    "configured_url",
    "platform_client",
    "user_config",
]

#: One request's limit; the client's retry policy adds a few short attempts.
CLIENT_TIMEOUT_SECONDS = 30.0


def user_config() -> gw.Config:
    """The URL and API key in force (``gw.current_config()``); not logged in: exit 6."""
    try:
        return gw.current_config()
    except gw.ConfigurationError as exc:
        raise CliError(str(exc), ExitCode.NOT_LOGGED_IN) from exc


@contextmanager
def platform_client(config: gw.Config | None = None) -> Iterator[PlatformClient]:
    """A client of the platform with the user's key, closed after the command."""
    config = config or user_config()
    with PlatformClient(config.url, config.api_key, timeout=CLIENT_TIMEOUT_SECONDS) as client:
        yield client


def configured_url() -> str:
    """The platform URL in force, with or without a key (the default of ``login``)."""
    try:
        return gw.current_config().url
    except gw.ConfigurationError:
        return (os.environ.get("GRIDWEAVE_URL") or gw.DEFAULT_URL).rstrip("/")


def checked_url(url: str) -> str:
    """``url`` without a trailing slash; anything but http(s) is a usage error."""
    if not url.startswith(("http://", "https://")):
        raise typer.BadParameter(f"{url!r}: expected http://... or https://...", param_hint="--url")
    return url.rstrip("/")
