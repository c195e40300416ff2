"""job_gateway (port 8200): job submission, VRAM-aware scheduling and dispatch."""

from __future__ import annotations

__all__: list[str] = []
