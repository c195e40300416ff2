"""The all-in-one's secrets, made once and kept under ``<state_dir>/secrets`` (mode 0600).

The internal token is what every service trusts on internal calls, and (through the
platform's default) the key API keys are hashed with: it must survive restarts, or every
issued API key would stop working. The dashboard's proxy secret is given only to the
dashboard and the platform.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

__all__ = ["dashboard_proxy_secret", "internal_token", "secrets_dir"]

_TOKEN_BYTES = 32


def secrets_dir(state_dir: Path) -> Path:
    """``<state_dir>/secrets``, created readable by its owner only."""
    directory = state_dir / "secrets"
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    directory.chmod(0o700)
    return directory


def internal_token(state_dir: Path) -> str:
    """The internal token of this state directory: read, or made and written once."""
    return _kept_secret(state_dir, "internal-token")


def dashboard_proxy_secret(state_dir: Path) -> str:
    """The secret by which the platform knows its dashboard's proxy (and believes the
    browser's address it forwards): read, or made and written once."""
    return _kept_secret(state_dir, "dashboard-proxy-secret")


def _kept_secret(state_dir: Path, name: str) -> str:
    path = secrets_dir(state_dir) / name
    try:
        token = path.read_text().strip()
    except FileNotFoundError:
        token = ""
    if token:
        return token
    token = secrets.token_urlsafe(_TOKEN_BYTES)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(token + "\n")
    tmp.replace(path)
    return token
