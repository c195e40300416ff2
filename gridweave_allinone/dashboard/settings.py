"""Settings of the dashboard's server (prefix ``WEB_``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["DEFAULT_DIST_DIR", "DashboardSettings"]

#: Where ``make web`` (``vite build``) leaves the dashboard in a checkout.
DEFAULT_DIST_DIR = Path(__file__).resolve().parents[2] / "web" / "dist"


class DashboardSettings(BaseSettings):
    """Where the dashboard listens, what it serves and which platform it proxies to."""

    model_config = SettingsConfigDict(env_prefix="WEB_", extra="ignore", frozen=True)

    host: str = Field(default="127.0.0.1", description="Address the dashboard listens on.")
    port: int = Field(default=3000, ge=1, le=65535, description="TCP port of the dashboard.")
    platform_url: str = Field(
        default="http://127.0.0.1:8100",
        description="The platform the dashboard's /v1 requests are proxied to.",
    )
    proxy_secret: SecretStr | None = Field(
        default=None,
        description=(
            "Sent to the platform with each proxied request (X-Gridweave-Proxy) beside the "
            "browser's address in X-Forwarded-For; the platform believes that address only "
            "when this equals its PLATFORM_DASHBOARD_PROXY_SECRET. The all-in-one makes one."
        ),
    )
    forwarded_allow_ips: str = Field(
        default="",
        description=(
            "The addresses (comma-separated, uvicorn's forwarded_allow_ips) of a TLS "
            "terminator in front of the dashboard whose X-Forwarded-For and -Proto it "
            "believes (the platform then marks the session cookie Secure). Empty: none, so "
            "no local process can name the address the faucet's per-address limits count."
        ),
    )
    dist_dir: Path | None = Field(
        default=None,
        description="The built dashboard. Unset: web/dist of this checkout (made by make web).",
    )
    service_urls: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "JSON name -> base URL of each service whose /healthz and /metrics the admins' "
            "diagnostics page shows."
        ),
    )
