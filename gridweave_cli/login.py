"""``gridweave login`` and ``gridweave signup``: an API key checked and saved where the SDK
reads it (``gw.write_config``: ``$GRIDWEAVE_CONFIG`` or ``~/.config/gridweave/config.toml``,
mode 0600)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

import gridweave as gw
from gridweave_cli._errors import handle_errors, warn
from gridweave_cli._help import add_commands
from gridweave_cli._output import JsonFlag, credits_text, emit_json, stderr, stdout
from gridweave_cli._platform import CLIENT_TIMEOUT_SECONDS, checked_url, configured_url
from gridweave_clients import ServiceRefused
from gridweave_clients.platform import PlatformClient
from gridweave_clients.platform.models import RegisteredUserResponse, UserResponse

__all__ = ["login", "register", "signup"]

#: Wrong codes typed before ``signup`` gives up (the faucet locks a code after a few more).
CODE_ATTEMPTS = 3

UrlOption = Annotated[
    str | None,
    typer.Option(
        "--url",
        help="The platform's URL (default: GRIDWEAVE_URL, the saved one, or the local one).",
        show_default=False,
    ),
]


def _save(url: str, api_key: str) -> Path:
    path = gw.write_config(url=url, api_key=api_key)
    if os.environ.get("GRIDWEAVE_API_KEY") not in (None, api_key):
        warn("GRIDWEAVE_API_KEY is set and takes precedence over the saved key")
    return path


@handle_errors
def login(
    url: UrlOption = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            help="The API key (asked for, hidden, when left out).",
            show_default=False,
        ),
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Check an API key with the platform and save it with the URL for the SDK and the CLI.

    Examples:

        gridweave login

        gridweave login --url https://gpu.example.com --api-key gw_live_...
    """
    if url is None:
        url = typer.prompt("Platform URL", default=configured_url(), err=True)
    url = checked_url(url)
    if api_key is None:
        api_key = typer.prompt("API key", hide_input=True, err=True)
    api_key = api_key.strip()
    with PlatformClient(url, api_key, timeout=CLIENT_TIMEOUT_SECONDS) as client:
        user = client.get_me()
    path = _save(url, api_key)
    if json_output:
        emit_json({"url": url, "config_path": str(path), "user": user.model_dump(mode="json")})
        return
    stdout().print(
        f"Logged in to {escape(url)} as {escape(_who(user))}; saved to {escape(str(path))}"
    )


def _who(user: UserResponse) -> str:
    email = f" <{user.email}>" if user.email else ""
    return f"{user.user_id}{email} ({user.role})"


def _verify(client: PlatformClient, email: str, code: str | None) -> RegisteredUserResponse:
    """Verify ``code``; without one, ask for it (again after a wrong one, a few times)."""
    if code is not None:
        return client.verify_sign_up(email, code.strip())
    for attempt in range(1, CODE_ATTEMPTS + 1):
        typed = typer.prompt("Code from the email", err=True).strip()
        try:
            return client.verify_sign_up(email, typed)
        except ServiceRefused as exc:
            if exc.code != "wrong_code" or attempt == CODE_ATTEMPTS:
                raise
            warn(f"{exc.message}; try again")
    raise AssertionError("unreachable")  # the last attempt returned or raised


@handle_errors
def signup(
    email: Annotated[
        str | None,
        typer.Option("--email", help="Your email (asked for when left out).", show_default=False),
    ] = None,
    code: Annotated[
        str | None,
        typer.Option(
            "--code",
            help="The code already received: verify it without sending another.",
            show_default=False,
        ),
    ] = None,
    url: UrlOption = None,
    json_output: JsonFlag = False,
) -> None:
    """Sign up with your email: a code is sent, you type it, and your first API key and the
    onboarding credits are yours; the key is saved like `gridweave login` saves it.

    Examples:

        gridweave signup --email you@example.com

        gridweave signup --email you@example.com --code 123456   (the code sent earlier)
    """
    url = checked_url(url or configured_url())
    if email is None:
        email = typer.prompt("Email", err=True)
    email = email.strip()
    with PlatformClient(url, None, timeout=CLIENT_TIMEOUT_SECONDS) as client:
        if code is None:
            sent = client.sign_up(email)
            where = "the operator's outbox" if sent.delivery == "outbox" else sent.email
            stderr().print(
                f"A code was sent to {escape(where)}; it works until "
                f"{sent.expires_at:%Y-%m-%d %H:%M} UTC."
            )
        registered = _verify(client, email, code)
    path = _save(url, registered.api_key.api_key)
    if json_output:
        emit_json(
            {
                "url": url,
                "config_path": str(path),
                "user": registered.user.model_dump(mode="json"),
                "api_key": registered.api_key.api_key,
                "grant": registered.grant,
            }
        )
        return
    console = stdout()
    console.print(f"Welcome, {escape(_who(registered.user))}.")
    console.print(f"Your API key (shown once): [bold]{escape(registered.api_key.api_key)}[/]")
    if registered.grant:
        console.print(f"Onboarding grant: {credits_text(registered.grant)} credits")
    console.print(f"Saved to {escape(str(path))}")


def register(app: typer.Typer) -> None:
    """Add ``login`` and ``signup`` to ``app``."""
    add_commands(app, login, signup)
