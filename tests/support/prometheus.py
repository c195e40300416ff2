"""A real Prometheus on loopback for the console's tests: the pinned build, one per fixture.

The binary is the all-in-one's (``tools/prometheus/build.sh``, cached; built on first use
when Go is there); the configuration is the one ``gridweave up`` writes, with a scrape
every second so a test waits seconds, not minutes, for its samples.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from functools import cache
from pathlib import Path

import httpx

from gridweave_allinone.prometheus import (
    PrometheusUnavailable,
    find_prometheus,
    prometheus_arguments,
    write_config,
)
from tests.support.http_server import free_port
from tests.support.unavailable import entered_or_skip

__all__ = ["prometheus_binary", "running_prometheus", "started_or_skip"]

_START_TIMEOUT_S = 60.0
_STOP_TIMEOUT_S = 30.0


@cache
def prometheus_binary() -> Path:
    """The pinned prometheus (built once per session when missing)."""
    return find_prometheus()


@contextmanager
def running_prometheus(
    directory: Path,
    targets: Mapping[str, str],
    *,
    interval_s: float = 1.0,
    port: int | None = None,
) -> Iterator[str]:
    """Prometheus reading ``targets`` (service name to ``host:port``) every ``interval_s``
    seconds, on ``port`` (else a free one) of loopback, its configuration and data in
    ``directory``; yields its URL once ready and stops it (SIGTERM: it closes its database)
    on the way out."""
    binary = prometheus_binary()
    port = port or free_port()
    config = write_config(directory, targets, interval_s=interval_s)
    flags = prometheus_arguments(config, directory / "data", listen=f"127.0.0.1:{port}")
    log_path = directory / "prometheus.log"
    url = f"http://127.0.0.1:{port}"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(binary), *flags], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        _wait_ready(process, url, log_path)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=_STOP_TIMEOUT_S)


def _wait_ready(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + _START_TIMEOUT_S
    with httpx.Client(timeout=2.0, trust_env=False) as http:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"prometheus exited ({process.returncode}):\n{log.read_text()}")
            try:
                if http.get(f"{url}/-/ready").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"prometheus not ready after {_START_TIMEOUT_S:.0f} s")
            time.sleep(0.1)


def started_or_skip(context: AbstractContextManager[str]) -> AbstractContextManager[str]:
    """``context`` (a running Prometheus) entered for the block; no binary fails the run
    under CI=true, else skips."""
    return entered_or_skip("Prometheus", context, PrometheusUnavailable)
