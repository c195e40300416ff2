"""Factories and helpers of the metering_service tests: defaults in one place."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import httpx

from metering_service.app import create_app
from metering_service.settings import MeteringSettings
from tests.support.credentials import service_auth, service_auth_env
from tests.support.credit_server import AUTH_HEADERS, INTERNAL_TOKEN
from tests.support.http_server import running_service
from tests.support.service_process import stop_process
from tests.support.waiting import wait_until


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
        **service_auth(INTERNAL_TOKEN),
        "credit_service_url": credit_url,
        "credit_attempts": 2,
        "credit_timeout_seconds": 10.0,
        # the hold sweeper's passes run where a test calls them (test_hold_sweeper)
        "hold_sweep_seconds": 0,
        **overrides,
    }
    return MeteringSettings(**values)


def running_metering(
    settings: MeteringSettings, *, port: int | None = None, **app_options: Any
) -> AbstractContextManager[httpx.Client]:
    """metering_service served on a loopback port (``port``, else a free one); a client
    carrying the token."""
    return running_service(create_app(settings, **app_options), AUTH_HEADERS, port=port)


#: The deliverer's log line once it listens for SIGTERM (``metering_service.deliverer``).
_LISTENING = "metering: delivering receipts to"


def start_deliverer(
    database_url: str, chain_url: str, *, log: Path, **receipt_settings: object
) -> subprocess.Popen[bytes]:
    """``python -m metering_service.deliverer`` on metering's database, sending to
    ``chain_url``; ``receipt_settings``: ``METERING_RECEIPT_*`` by field name, without the
    ``receipt_`` (``poll_seconds=0.05``)."""
    env = {
        **os.environ,
        "METERING_DATABASE_URL": database_url,
        "CHAIN_SERVICE_URL": chain_url,
        **service_auth_env(INTERNAL_TOKEN),
        "GRIDWEAVE_STATE_DIR": str(log.parent),
        **{f"METERING_RECEIPT_{name.upper()}": str(v) for name, v in receipt_settings.items()},
    }
    with log.open("ab") as output:
        return subprocess.Popen(
            [sys.executable, "-m", "metering_service.deliverer"],
            env=env,
            stdout=output,
            stderr=output,
        )


@contextmanager
def running_deliverer(
    database_url: str, chain_url: str, *, log: Path, **receipt_settings: object
) -> Iterator[subprocess.Popen[bytes]]:
    """The receipt deliverer as its own process (:func:`start_deliverer`) until the block
    ends; then stopped with SIGTERM, which it must obey (exit 0). A deliverer that exited
    on its own (not killed by the test) fails the test with its log."""
    process = start_deliverer(database_url, chain_url, log=log, **receipt_settings)
    # its SIGTERM is the test's to send only once it listens for it (it logs that line)
    wait_until(
        lambda: process.poll() is not None or _LISTENING in log.read_text(errors="replace"),
        timeout=60,
        what="the deliverer to listen for SIGTERM",
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            code = stop_process(process)
            assert code == 0, f"the deliverer ignored SIGTERM ({code}): {log.read_text()}"
        elif process.returncode != -signal.SIGKILL:
            raise AssertionError(f"the deliverer exited ({process.returncode}): {log.read_text()}")


@contextmanager
def running_metering_and_deliverer(
    settings: MeteringSettings, chain_url: str, *, log: Path, **receipt_settings: object
) -> Iterator[httpx.Client]:
    """metering_service (:func:`running_metering`) and its receipt deliverer sending to
    ``chain_url`` (:func:`running_deliverer`), as deployed; a client of metering."""
    assert settings.database_url is not None
    with (
        running_metering(settings) as metering,
        running_deliverer(settings.database_url, chain_url, log=log, **receipt_settings),
    ):
        yield metering
