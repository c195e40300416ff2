"""The gateway's routes: thin, each calling a service."""

from __future__ import annotations

__all__: list[str] = []
