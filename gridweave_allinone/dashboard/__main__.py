"""``python -m gridweave_allinone.dashboard``: serve the dashboard until stopped."""

from __future__ import annotations

from typing import Any

import uvicorn

from gridweave_allinone.dashboard.app import create_dashboard_app
from gridweave_allinone.dashboard.settings import DashboardSettings


def main() -> None:
    """Serve on WEB_HOST:WEB_PORT."""
    settings = DashboardSettings()
    uvicorn.run(**server_options(settings))


def server_options(settings: DashboardSettings) -> dict[str, Any]:
    """uvicorn.run's arguments for ``settings``."""
    return dict(
        app=create_dashboard_app(settings),
        host=settings.host,
        port=settings.port,
        log_level="warning",
        # only a TLS terminator named in WEB_FORWARDED_ALLOW_IPS may say where the browser
        # came from and over what (else any local process would name the address the
        # faucet's per-address limits count)
        proxy_headers=bool(settings.forwarded_allow_ips),
        forwarded_allow_ips=settings.forwarded_allow_ips or None,
    )


if __name__ == "__main__":
    main()
