"""The one billing rule of running time, used by the controller and by metering_service."""

from __future__ import annotations

import math

__all__ = ["billed_seconds"]


def billed_seconds(wall_seconds: float) -> int:
    """Whole seconds billed for ``wall_seconds`` of running time: rounded up (ceil)."""
    return math.ceil(wall_seconds)
