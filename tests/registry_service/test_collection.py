"""Garbage collection: the registry read-only meanwhile (a push refused with the reason, a
pull served), read-write after; an interrupted collection runs again at the next start;
the supervisor's /healthz, /metrics and POST /v1/collections."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from registry_service.app import create_app
from registry_service.supervisor import RegistrySupervisor
from tests.platform_service.factories import PlatformServer
from tests.registry_service.factories import (
    Crane,
    registry_binary,
    registry_settings,
    running_registry,
)
from tests.support.credit_server import INTERNAL_TOKEN
from tests.support.http_server import serve_in_thread

pytestmark = pytest.mark.postgres


class PausingSupervisor(RegistrySupervisor):
    """Stops inside each collection, read-only, until the test lets it go on."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.paused = threading.Event()
        self.resume = threading.Event()

    def _garbage_collect(self) -> None:
        self.paused.set()
        assert self.resume.wait(60)
        super()._garbage_collect()


def test_a_push_during_a_collection_fails_clearly_and_pulls_go_on(
    platform: PlatformServer, registry_tools: None, tmp_path: Path
) -> None:
    settings = registry_settings(platform.url, tmp_path / "state")
    with running_registry(settings, PausingSupervisor) as supervisor:
        assert isinstance(supervisor, PausingSupervisor)
        user = platform.new_user()
        crane = Crane(f"localhost:{settings.port}", tmp_path / "crane")
        crane.login(user.key)
        crane.push_random(f"{user.user_id}/app", 10_000)
        collection = threading.Thread(target=supervisor.collect)
        collection.start()
        try:
            assert supervisor.paused.wait(30)
            assert supervisor.read_only
            refused = crane.push_random(f"{user.user_id}/app", 10_000, tag="v2", check=False)
            assert refused.returncode != 0
            assert "read-only while it collects garbage" in refused.stderr
            assert crane.digest(f"{user.user_id}/app").stdout.startswith("sha256:")
        finally:
            supervisor.resume.set()
            collection.join(60)
        assert not supervisor.read_only
        crane.push_random(f"{user.user_id}/app", 10_000, tag="v2")


def test_a_push_under_way_finishes_before_the_registry_goes_read_only(
    platform: PlatformServer, registry_tools: None, tmp_path: Path
) -> None:
    """The collection waits (read-write) for the push tokens granted before it to expire,
    at most REGISTRY_GC_DRAIN_SECONDS: the push under way finishes; a new one is refused
    by the platform with the reason; pulls go on."""
    drain = 20.0
    settings = registry_settings(platform.url, tmp_path / "state", gc_drain_seconds=drain)
    with running_registry(settings) as supervisor:
        user = platform.new_user()
        crane = Crane(f"localhost:{settings.port}", tmp_path / "crane")
        crane.login(user.key)
        crane.push_random(f"{user.user_id}/small", 10_000)
        late = Crane(f"localhost:{settings.port}", tmp_path / "late")
        late.login(user.key)
        pushed: list[subprocess.CompletedProcess[str]] = []
        push = threading.Thread(
            target=lambda: pushed.append(
                crane.push_random(f"{user.user_id}/big", 40_000_000, check=False)
            )
        )
        push.start()
        uploads = settings.resolved_storage_dir() / "docker/registry/v2/repositories"
        uploads = uploads / user.user_id / "big" / "_uploads"
        deadline = time.monotonic() + 60
        while not (uploads.is_dir() and any(uploads.iterdir())):  # the blob's upload began
            assert push.is_alive() and time.monotonic() < deadline, pushed
            time.sleep(0.01)
        started = time.monotonic()
        collection = threading.Thread(target=supervisor.collect)
        collection.start()
        try:
            push.join(60)
            assert pushed[0].returncode == 0, pushed[0].stderr
            assert not supervisor.read_only  # still waiting for the tokens to expire
            refused = late.push_random(f"{user.user_id}/app", 10_000, check=False)
            assert "read-only while it collects garbage" in refused.stderr
            assert crane.digest(f"{user.user_id}/big").stdout.startswith("sha256:")
        finally:
            collection.join(120)
        assert time.monotonic() - started >= drain  # the platform's tokens outlive the wait
        assert not supervisor.read_only
        late.push_random(f"{user.user_id}/app", 10_000)


def test_an_interrupted_collection_runs_again_at_the_next_start(
    platform: PlatformServer, registry_tools: None, tmp_path: Path
) -> None:
    settings = registry_settings(platform.url, tmp_path / "state")
    user = platform.new_user()
    crane = Crane(f"localhost:{settings.port}", tmp_path / "crane")
    with running_registry(settings) as supervisor:
        crane.login(user.key)
        crane.push_random(f"{user.user_id}/app", 50_000)
        digest = crane.digest(f"{user.user_id}/app").stdout.strip()
        crane.run("delete", f"{crane.registry}/{user.user_id}/app@{digest}")
        supervisor.marker_path.write_text("0\n")  # as a supervisor killed mid-collection
    with running_registry(settings) as supervisor:
        assert supervisor.interrupted_collection
        assert not supervisor.read_only  # it starts read-write, and clean
        stop = threading.Event()
        loop = threading.Thread(target=supervisor.run, args=(stop,))
        loop.start()
        try:
            for _ in range(300):
                if not supervisor.interrupted_collection:
                    break
                stop.wait(0.1)
        finally:
            stop.set()
            loop.join(60)
        assert not supervisor.interrupted_collection
        assert supervisor.healthy()
        crane.push_random(f"{user.user_id}/app", 1000)


def test_the_supervisors_health_metrics_and_collections(
    platform: PlatformServer, registry_tools: None, tmp_path: Path
) -> None:
    settings = registry_settings(platform.url, tmp_path / "state")
    app = create_app(settings, binary=registry_binary())
    supervisor: RegistrySupervisor = app.state.supervisor
    supervisor.start()
    try:
        with serve_in_thread(app, settings) as url:
            assert httpx.get(f"{url}/healthz").status_code == 200
            refused = httpx.post(f"{url}/v1/collections")
            assert refused.status_code == 401
            collected = httpx.post(
                f"{url}/v1/collections", headers={"Authorization": f"Bearer {INTERNAL_TOKEN}"}
            )
            assert collected.status_code == 200, collected.text
            assert collected.json()["reclaimed_bytes"] == 0
            metrics = httpx.get(f"{url}/metrics").text
            assert 'gridweave_registry_gc_runs_total{outcome="ok"} 1.0' in metrics
            assert "gridweave_registry_gc_reclaimed_bytes_total 0.0" in metrics
            supervisor.stop()
            assert httpx.get(f"{url}/healthz").status_code == 503
    finally:
        supervisor.close()


def test_a_new_signing_key_is_picked_up_at_the_next_refresh(
    platform: PlatformServer, registry_tools: None, tmp_path: Path
) -> None:
    settings = registry_settings(platform.url, tmp_path / "state")
    with running_registry(settings) as supervisor:
        user = platform.new_user()
        crane = Crane(f"localhost:{settings.port}", tmp_path / "crane")
        crane.login(user.key)
        # the registry trusting another key, as after the platform's key was replaced
        real = supervisor.jwks_path.read_text()
        other = real.replace(real.split('"kid":"')[1].split('"')[0], "another-key")
        supervisor.jwks_path.write_text(other)
        supervisor.stop()
        assert supervisor.restart_if_dead()
        refused = crane.push_random(f"{user.user_id}/app", 1000, check=False)
        assert refused.returncode != 0
        assert supervisor.refresh_jwks() is True
        assert supervisor.refresh_jwks() is False  # unchanged now
        crane.push_random(f"{user.user_id}/app", 1000)


def test_a_registry_left_by_a_killed_supervisor_is_stopped_at_the_next_start(
    platform: PlatformServer, registry_tools: None, tmp_path: Path
) -> None:
    settings = registry_settings(platform.url, tmp_path / "state")
    killed = RegistrySupervisor(settings, binary=registry_binary())
    killed.start()  # and never stopped: as when its process is killed
    assert killed._process is not None
    left = killed._process
    try:
        with running_registry(settings) as supervisor:
            assert left.wait(30) is not None  # the orphan was stopped
            assert supervisor.healthy()
    finally:
        if left.poll() is None:
            left.kill()
            left.wait()
        killed.close()
