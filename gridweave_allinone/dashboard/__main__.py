"""``python -m gridweave_allinone.dashboard``: serve the dashboard until stopped."""

from __future__ import annotations

import uvicorn

from gridweave_allinone.dashboard.app import create_dashboard_app
from gridweave_allinone.dashboard.settings import DashboardSettings


def main() -> None:
    """Serve on WEB_HOST:WEB_PORT."""
    settings = DashboardSettings()
    uvicorn.run(
        create_dashboard_app(settings),
        host=settings.host,
        port=settings.port,
        log_level="warning",
        # a TLS terminator on this machine may say the browser came over HTTPS (the platform
        # then marks the session cookie Secure)
        proxy_headers=True,
        forwarded_allow_ips="127.0.0.1",
    )


if __name__ == "__main__":
    main()
