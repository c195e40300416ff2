"""Factories and helpers of the metering_service tests: defaults in one place."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from metering_service.app import create_app
from metering_service.settings import MeteringSettings
from tests.support.credit_server import AUTH_HEADERS, INTERNAL_TOKEN
from tests.support.http_server import serve_in_thread


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


@contextmanager
def running_metering(settings: MeteringSettings, **app_options: Any) -> Iterator[httpx.Client]:
    """metering_service served on a loopback port; yields a client carrying the token."""
    app = create_app(settings, **app_options)
    try:
        with (
            serve_in_thread(app) as url,
            httpx.Client(base_url=url, headers=AUTH_HEADERS, timeout=60) as client,
        ):
            yield client
    finally:
        app.state.database.dispose()
