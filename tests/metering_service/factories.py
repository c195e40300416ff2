"""Factories and helpers of the metering_service tests: defaults in one place."""

from __future__ import annotations

import uuid
from contextlib import AbstractContextManager
from typing import Any

import httpx

from metering_service.app import create_app
from metering_service.settings import MeteringSettings
from tests.support.credit_server import AUTH_HEADERS, INTERNAL_TOKEN
from tests.support.http_server import running_service


def unique(prefix: str) -> str:
    """A fresh id, so tests sharing a module's databases never collide."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def usage_body(job_id: str, user_id: str, **overrides: Any) -> dict[str, Any]:
    """A valid usage record for ``job_id``: one 24 GiB NVIDIA slice for 10 seconds."""
    return {
        "job_id": job_id,
        "user_id": user_id,
        "node": "node-a",
        "gpu_indices": [0],
        "vram_mb": 24_576,
        "vendor": "nvidia",
        "gpu_count": 1,
        "wall_seconds": 10.0,
        **overrides,
    }


def metering_settings(database_url: str, credit_url: str, **overrides: Any) -> MeteringSettings:
    """Settings for a metering_service on ``database_url`` calling ``credit_url``."""
    values: dict[str, Any] = {
        "database_url": database_url,
        "internal_token": INTERNAL_TOKEN,
        "credit_service_url": credit_url,
        "credit_attempts": 2,
        "credit_timeout_seconds": 10.0,
        **overrides,
    }
    return MeteringSettings(**values)


def running_metering(
    settings: MeteringSettings, **app_options: Any
) -> AbstractContextManager[httpx.Client]:
    """metering_service served on a loopback port; a client carrying the token."""
    return running_service(create_app(settings, **app_options), AUTH_HEADERS)
