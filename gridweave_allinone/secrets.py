"""The all-in-one's secrets, made once and kept under ``<state_dir>/secrets`` (mode 0600).

The internal token is what every service trusts on internal calls, and (through the
platform's default) the key API keys are hashed with: it must survive restarts, or every
issued API key would stop working. The dashboard's proxy secret is given only to the
dashboard and the platform. The embedded PostgreSQL's passwords are kept in the same
directory by ``gridweave_runtime.postgres``.
"""

from __future__ import annotations

from pathlib import Path

from gridweave_runtime.secrets import kept_secret, secrets_dir

__all__ = ["dashboard_proxy_secret", "internal_token", "secrets_dir"]


def internal_token(state_dir: Path) -> str:
    """The internal token of this state directory: read, or made and written once."""
    return kept_secret(state_dir, "internal-token")


def dashboard_proxy_secret(state_dir: Path) -> str:
    """The secret by which the platform knows its dashboard's proxy (and believes the
    browser's address it forwards): read, or made and written once."""
    return kept_secret(state_dir, "dashboard-proxy-secret")
