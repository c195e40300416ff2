"""The gateway's rules, called by the routers with keyword arguments."""

from __future__ import annotations

__all__: list[str] = []
