"""metering_service: usage records, billed seconds, prices, and settling each job's hold."""

from __future__ import annotations

from metering_service.app import create_app
from metering_service.settings import MeteringSettings

__all__ = ["MeteringSettings", "create_app"]
