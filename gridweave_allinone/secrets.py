"""The all-in-one's secrets, made once and kept under ``<state_dir>/secrets`` (mode 0600).

Each service's token (``gridweave_runtime.credentials``) is what the other services know it
by, and the platform's is also the key API keys are hashed with (through the platform's
default): they must survive restarts, or every issued API key would stop working. A state
directory made before services had tokens of their own kept one ``internal-token``, which
every service held: it becomes the platform's token (so its API keys keep working), and
every other service gets a new one. The Serve key's secret is given only to the platform
and the gateway; the dashboard's proxy secret only to the dashboard and the platform. The
embedded PostgreSQL's passwords are kept in the same directory by
``gridweave_runtime.postgres``.
"""

from __future__ import annotations

from pathlib import Path

from gridweave_runtime.secrets import kept_secret, secrets_dir
from gridweave_runtime.service_roster import SERVICE_ROLES

__all__ = ["dashboard_proxy_secret", "secrets_dir", "serve_key_secret", "service_tokens"]

#: What a state directory from before per-service tokens kept: the platform's token now.
_SHARED_TOKEN = "internal-token"


def service_tokens(state_dir: Path) -> dict[str, str]:
    """Each credential's token of this state directory (``SERVICE_ROLES``' names): read, or
    made and written once."""
    directory = secrets_dir(state_dir)
    shared, platform = directory / _SHARED_TOKEN, directory / "platform-token"
    if shared.exists() and not platform.exists():
        shared.replace(platform)
    return {name: kept_secret(state_dir, f"{name}-token") for name in SERVICE_ROLES}


def serve_key_secret(state_dir: Path) -> str:
    """The secret the platform and the gateway derive Ray Serve's key from."""
    return kept_secret(state_dir, "serve-key")


def dashboard_proxy_secret(state_dir: Path) -> str:
    """The secret by which the platform knows its dashboard's proxy (and believes the
    browser's address it forwards): read, or made and written once."""
    return kept_secret(state_dir, "dashboard-proxy-secret")
