"""``python -m registry_service``: the registry and its supervisor until SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.platform_service.factories import PlatformServer
from tests.registry_service.factories import REPO_ROOT, localhost_url, registry_binary
from tests.support.credentials import service_auth_env
from tests.support.credit_server import INTERNAL_TOKEN
from tests.support.http_server import free_port

pytestmark = pytest.mark.postgres


def test_it_serves_until_sigterm_and_stops_the_registry(
    platform: PlatformServer, registry_tools: None, tmp_path: Path
) -> None:
    port, health_port = free_port(), free_port()
    env = {
        **os.environ,
        **service_auth_env(INTERNAL_TOKEN),
        "GRIDWEAVE_STATE_DIR": str(tmp_path),
        "REGISTRY_PORT": str(port),
        "REGISTRY_HEALTH_PORT": str(health_port),
        "REGISTRY_BINARY": str(registry_binary()),
        "PLATFORM_URL": localhost_url(platform.url),
        "REGISTRY_GC_INTERVAL_HOURS": "0.5",
    }
    log = tmp_path / "registry_service.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "registry_service"],
            cwd=REPO_ROOT,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{health_port}/healthz").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the supervisor never became healthy"
            time.sleep(0.1)
        challenge = httpx.get(f"http://127.0.0.1:{port}/v2/")
        assert challenge.status_code == 401
        assert "/v1/registry/token" in challenge.headers["WWW-Authenticate"]
        assert (tmp_path / "registry" / "config.yml").stat().st_mode & 0o777 == 0o600
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.1:{port}/v2/")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_bad_setting_exits_2(tmp_path: Path) -> None:
    env = {**os.environ, "REGISTRY_GC_INTERVAL_HOURS": "-1", "GRIDWEAVE_STATE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "registry_service"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "gc_interval_hours" in done.stderr or "REGISTRY_GC_INTERVAL_HOURS" in done.stderr
