"""The dashboard's server (port 3000): the built web app, with ``/v1`` proxied to the platform.

One origin for the page and the API, so the session cookie (SameSite=Strict) travels and no
CORS is needed. ``python -m gridweave_allinone.dashboard`` runs it; ``gridweave up`` starts
it after the platform.
"""

from __future__ import annotations

from gridweave_allinone.dashboard.app import create_dashboard_app
from gridweave_allinone.dashboard.settings import DashboardSettings

__all__ = ["DashboardSettings", "create_dashboard_app"]
