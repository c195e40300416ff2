"""The all-in-one's parts on their own: secrets, the state-directory lock, the supervisor,
the message when Go is missing, the services' wiring."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from gridweave_allinone.kube import start_kube
from gridweave_allinone.platform import AllInOne, AlreadyRunning, _lock_state_dir
from gridweave_allinone.ports import PortsInUse, needed_ports, taken_ports
from gridweave_allinone.prometheus import PrometheusUnavailable
from gridweave_allinone.secrets import dashboard_proxy_secret, serve_key_secret, service_tokens
from gridweave_allinone.services import (
    SCRAPED_SERVICES,
    ServiceSpec,
    Wiring,
    service_databases,
    service_waves,
)
from gridweave_allinone.settings import DEFAULT_PORTS, AllInOneSettings
from gridweave_allinone.supervisor import StartFailed, Supervisor
from gridweave_runtime.kubeapi import BIN_ENV, KubeAPIError
from gridweave_runtime.service_roster import SERVICE_ROLES
from tests.support.allinone import free_port_offset, leftover_processes
from tests.support.prometheus import prometheus_binary
from tests.support.unavailable import fail_or_skip
from tests.support.waiting import wait_until


def _waves(settings: AllInOneSettings, tmp_path: Path, **options: Any) -> list[list[ServiceSpec]]:
    """:func:`service_waves` with the two services' kubeconfigs under ``tmp_path``."""
    return service_waves(
        settings,
        service_kubeconfig=tmp_path / "kuberay.kubeconfig",
        gateway_kubeconfig=tmp_path / "gateway.kubeconfig",
        **options,
    )


def _wiring(waves: list[list[ServiceSpec]], common: dict[str, str] | None = None) -> Wiring:
    """Each database's URL as the all-in-one makes it: its own role, its own password."""
    return Wiring(
        {
            name: f"postgresql+psycopg://gw_{name}:pw-{name}@/{name}?host=/sock"
            for name in service_databases(waves)
        },
        common or {},
        tokens={name: f"token-of-{name}" for name in SERVICE_ROLES},
        serve_key="serve-key-secret",
    )


def test_each_service_token_is_made_once_and_readable_by_its_owner_only(tmp_path: Path) -> None:
    tokens = service_tokens(tmp_path)
    assert set(tokens) == set(SERVICE_ROLES)
    assert len(set(tokens.values())) == len(tokens)  # no two services share one
    assert all(len(token) >= 40 for token in tokens.values())
    assert service_tokens(tmp_path) == tokens
    for name in tokens:
        path = tmp_path / "secrets" / f"{name}-token"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "secrets").stat().st_mode) == 0o700
    assert serve_key_secret(tmp_path) not in tokens.values()


def test_the_shared_token_of_an_older_state_directory_becomes_the_platforms(
    tmp_path: Path,
) -> None:
    # the platform's API keys are hashed with a key derived from its token: they keep working
    secrets = tmp_path / "secrets"
    secrets.mkdir(mode=0o700)
    (secrets / "internal-token").write_text("the-old-shared-token\n")
    tokens = service_tokens(tmp_path)
    assert tokens["platform"] == "the-old-shared-token"
    assert "the-old-shared-token" not in {v for k, v in tokens.items() if k != "platform"}
    assert not (secrets / "internal-token").exists()


def test_a_second_all_in_one_on_the_same_directory_is_refused(tmp_path: Path) -> None:
    held = _lock_state_dir(tmp_path)
    try:
        with pytest.raises(AlreadyRunning, match=f"pid {os.getpid()}"):
            _lock_state_dir(tmp_path)
    finally:
        held.close()
    _lock_state_dir(tmp_path).close()  # free again once the first one is gone


def test_without_go_the_message_says_what_to_install_or_to_point_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(BIN_ENV, raising=False)
    monkeypatch.setenv("GRIDWEAVE_KUBEAPI_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no Go on it
    settings = AllInOneSettings(state_dir=tmp_path / "state")
    with pytest.raises(KubeAPIError) as raised:
        start_kube(settings, show_progress=False)
    assert "install Go" in str(raised.value)
    assert "GRIDWEAVE_KUBECONFIG" in str(raised.value)


def test_binding_every_address_keeps_the_wiring_on_loopback(tmp_path: Path) -> None:
    """GRIDWEAVE_HOST=0.0.0.0 (joined nodes reach kuberay-service on the LAN): every service
    binds it, and they reach each other on loopback."""
    settings = AllInOneSettings(state_dir=tmp_path, host="0.0.0.0")
    waves = _waves(settings, tmp_path)
    specs = {spec.name: spec for wave in waves for spec in wave}
    kuberay = specs["kuberay"].environment(_wiring(waves), settings.host)
    assert kuberay["KUBERAY_HOST"] == "0.0.0.0"
    assert settings.client_host == "127.0.0.1"
    assert settings.url("kuberay") == f"http://127.0.0.1:{DEFAULT_PORTS['kuberay']}"
    assert specs["gateway"].env["KUBERAY_URL"] == settings.url("kuberay")


def test_each_service_gets_its_port_database_and_the_shared_wiring(tmp_path: Path) -> None:
    settings = AllInOneSettings(state_dir=tmp_path, port_offset=1000)
    waves = _waves(settings, tmp_path)
    specs = {spec.name: spec for wave in waves for spec in wave}
    order = [spec.name for wave in waves for spec in wave]
    # the platform calls all the others; the registry asks the platform for its token key;
    # the dashboard proxies to the platform
    assert order[-3:] == ["platform", "web", "registry"]
    web = specs["web"].environment(_wiring(waves), "127.0.0.1")
    assert web["WEB_PORT"] == str(DEFAULT_PORTS["web"] + 1000) == "4000"
    assert web["WEB_PLATFORM_URL"] == f"http://127.0.0.1:{DEFAULT_PORTS['platform'] + 1000}"
    # diagnostics: every service with a /healthz and /metrics (the platform's URL is given
    # apart; CometBFT's node, with CHAIN_ENABLED, answers /health only); the registry's
    # supervisor answers them on its own port
    probed = json.loads(web["WEB_SERVICE_URLS"])
    served = {name for name, spec in specs.items() if spec.health_url("127.0.0.1") is not None}
    assert set(probed) == served - {"platform", "web", "cometbft"}
    assert probed["registry"] == f"http://127.0.0.1:{DEFAULT_PORTS['registry_health'] + 1000}"
    assert probed["gateway"] == f"http://127.0.0.1:{DEFAULT_PORTS['gateway'] + 1000}"
    registry_health = specs["registry"].health_url("127.0.0.1")
    assert registry_health is not None
    assert registry_health.endswith(f":{DEFAULT_PORTS['registry_health'] + 1000}/healthz")
    wiring = _wiring(waves, {"GRIDWEAVE_CREDENTIALS": "{}"})
    gateway = specs["gateway"].environment(wiring, "127.0.0.1")
    assert gateway["GATEWAY_SERVE_PORT"] == str(DEFAULT_PORTS["serve"] + 1000) == "9900"
    platform = specs["platform"].environment(wiring, "127.0.0.1")
    assert platform["PLATFORM_PORT"] == str(DEFAULT_PORTS["platform"] + 1000)
    # each service its own database, as that database's own role
    assert service_databases(waves) == [
        "credits",
        "kuberay",
        "chain",
        "metering",
        "faucet",
        "platform",
    ]
    for name, prefix, database in (
        ("platform", "PLATFORM_", "platform"),
        ("credit", "CREDITS_", "credits"),
        ("kuberay", "KUBERAY_", "kuberay"),
        ("chain", "CHAIN_", "chain"),
        ("faucet", "FAUCET_", "faucet"),
        ("metering", "METERING_", "metering"),
    ):
        environment = specs[name].environment(wiring, "127.0.0.1")
        url = environment[f"{prefix}DATABASE_URL"]
        assert url == wiring.database_urls[database]
        assert f"gw_{database}:pw-{database}@/{database}?" in url
        others = {v for v in environment if v.endswith("DATABASE_URL")} - {f"{prefix}DATABASE_URL"}
        assert others == set(), name
    assert platform["GATEWAY_URL"] == f"http://127.0.0.1:{DEFAULT_PORTS['gateway'] + 1000}"
    # each service its own token; only the platform and the gateway the Serve key's secret;
    # the dashboard and Prometheus no credential at all
    assert platform["GRIDWEAVE_SERVICE_TOKEN"] == "token-of-platform"
    assert platform["GRIDWEAVE_CREDENTIALS"] == "{}"
    tokens = {
        name: spec.environment(wiring, "127.0.0.1").get("GRIDWEAVE_SERVICE_TOKEN")
        for name, spec in specs.items()
    }
    assert tokens["metering-deliverer"] == tokens["metering"] == "token-of-metering"
    assert tokens["gateway"] == "token-of-gateway"
    assert tokens["web"] is None
    keyed = {n for n, s in specs.items() if "GRIDWEAVE_SERVE_KEY" in s.environment(wiring, "h")}
    assert keyed == {"platform", "gateway"}
    gateway = specs["gateway"].environment(wiring, "127.0.0.1")
    assert "GATEWAY_DATABASE_URL" not in gateway
    assert gateway["GATEWAY_RAY_PORT"] == str(DEFAULT_PORTS["ray"] + 1000)
    assert specs["kuberay"].env["KUBERAY_KUBECONFIG"].endswith("kuberay.kubeconfig")
    # the gateway reaches the CRDs itself, with its own ServiceAccount's kubeconfig
    assert gateway["GATEWAY_CRD_TRANSPORT"] == "direct"
    assert gateway["GATEWAY_KUBECONFIG"].endswith("gateway.kubeconfig")
    # metering's receipt deliverer: its own process, after metering (which migrates its
    # database), on metering's settings, sending to chain_service; no port to ask
    deliverer = specs["metering-deliverer"]
    assert order.index("metering-deliverer") > order.index("metering")
    assert deliverer.package == "metering_service.deliverer"
    assert deliverer.health_url("127.0.0.1") is None
    deliverer_env = deliverer.environment(wiring, "127.0.0.1")
    assert deliverer_env["CHAIN_SERVICE_URL"] == f"http://127.0.0.1:{DEFAULT_PORTS['chain'] + 1000}"
    assert deliverer_env["METERING_DATABASE_URL"] == wiring.database_urls["metering"]


def test_the_dashboards_proxy_secret_goes_to_the_dashboard_and_the_platform_only(
    tmp_path: Path,
) -> None:
    settings = AllInOneSettings(state_dir=tmp_path)
    secret = dashboard_proxy_secret(tmp_path)
    assert dashboard_proxy_secret(tmp_path) == secret and len(secret) >= 40  # kept
    assert (tmp_path / "secrets" / "dashboard-proxy-secret").stat().st_mode & 0o077 == 0
    waves = _waves(settings, tmp_path, proxy_secret=secret)
    wiring = _wiring(waves)
    holders = {
        spec.name: name
        for wave in waves
        for spec in wave
        for name, value in spec.environment(wiring, "127.0.0.1").items()
        if value == secret
    }
    assert holders == {"web": "WEB_PROXY_SECRET", "platform": "PLATFORM_DASHBOARD_PROXY_SECRET"}


def test_a_service_that_dies_is_started_again_and_all_are_stopped(tmp_path: Path) -> None:
    supervisor = Supervisor(tmp_path / "logs")
    # a service that never answers health checks is not asked (health_url None)
    child = supervisor.add("sleeper", "http.server", {}, health_url=None)
    child.command = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "0"]
    supervisor.start_wave([child], timeout_s=10)
    first = child.process
    assert first is not None and child.running()
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=10)
    reports: list[str] = []
    supervisor.watch(reports.append)
    assert reports == ["sleeper exited (-9); starting it again"]
    assert child.running() and child.process is not first
    supervisor.stop_all()
    assert child.process is not None and child.process.poll() is not None


def test_a_service_that_exits_while_starting_fails_the_start_naming_it(tmp_path: Path) -> None:
    supervisor = Supervisor(tmp_path / "logs")
    child = supervisor.add("broken", "no_such_module_here", {}, health_url="http://127.0.0.1:9/")
    started = time.monotonic()
    with pytest.raises(StartFailed, match="broken exited while starting"):
        supervisor.start_wave([child], timeout_s=60)
    assert time.monotonic() - started < 30
    assert "No module named no_such_module_here" in child.log_tail()


def test_a_refused_start_stops_nothing_of_the_running_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stopped: list[Path] = []

    def stop_local_head(temp_dir: Path) -> list[int]:
        stopped.append(temp_dir)
        return []

    monkeypatch.setattr("gridweave_allinone.platform.stop_local_head", stop_local_head)
    held = _lock_state_dir(tmp_path)  # the all-in-one already running there
    try:
        second = AllInOne(AllInOneSettings(state_dir=tmp_path), report=lambda _: None)
        with pytest.raises(AlreadyRunning):
            second.start()
        second.stop()
    finally:
        held.close()
    assert stopped == [], "the running all-in-one's Ray was left alone"


@pytest.mark.parametrize("offset", [2000, 1102, 10000])
def test_an_offset_among_rays_worker_ports_is_refused_naming_it(offset: int) -> None:
    with pytest.raises(ValidationError) as refused:
        AllInOneSettings(port_offset=offset)
    error = refused.value.errors()[0]
    assert error["loc"] == ("port_offset",)
    assert "Ray's worker ports (10002-19999)" in error["msg"]
    assert "up to 1101, or from 17000" in error["msg"]
    for fine in (0, 1101, 17000):
        assert AllInOneSettings(port_offset=fine).port("platform") == 8100 + fine


def _listener(port: int, *args: str, reuse_port: bool = False) -> subprocess.Popen[str]:
    """A process listening on every address's ``port`` (``args``: in its command line)."""
    code = (
        "import socket, sys, time\n"
        "s = socket.socket()\n"
        + ("s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)\n" if reuse_port else "")
        + f"s.bind(('0.0.0.0', {port})); s.listen(); print('listening', flush=True)\n"
        "time.sleep(600)\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline() == "listening\n"
    return process


def _stop(process: subprocess.Popen[str]) -> None:
    process.kill()
    process.wait()
    assert process.stdout is not None
    process.stdout.close()


def test_a_taken_port_is_named_with_its_holder_before_anything_starts(tmp_path: Path) -> None:
    """Held on every address while the all-in-one binds loopback, and with SO_REUSEPORT
    (as another Ray Serve proxy binds, which would share the connections in silence)."""
    offset = free_port_offset()
    settings = AllInOneSettings(state_dir=tmp_path / "state", port_offset=offset)
    holders = [
        _listener(settings.port("platform")),
        _listener(settings.port("serve"), reuse_port=True),
    ]
    try:
        with pytest.raises(PortsInUse) as refused:
            AllInOne(settings, report=lambda line: None).start()
        message = str(refused.value)
        for name, holder in zip(("platform", "serve"), holders, strict=True):
            assert f"{settings.port(name)} ({name}) is held by pid {holder.pid}" in message
        assert "GRIDWEAVE_PORT_OFFSET" in message
        assert not (tmp_path / "state" / "postgres").exists()  # nothing started
    finally:
        for holder in holders:
            _stop(holder)


def test_its_own_leftover_on_a_port_is_not_in_the_way(tmp_path: Path) -> None:
    """A process naming the state directory (a Ray head that outlived a killed start) is
    the all-in-one's own: the gateway takes its head back."""
    state = (tmp_path / "state").resolve()
    settings = AllInOneSettings(state_dir=state, port_offset=free_port_offset())
    own = _listener(settings.port("ray"), f"--temp-dir={state}/ray")
    try:
        assert taken_ports(settings.host, needed_ports(settings), own=str(state)) == []
        taken = taken_ports(settings.host, needed_ports(settings))
        assert [(t.name, t.port) for t in taken] == [("ray", settings.port("ray"))]
    finally:
        _stop(own)


def test_prometheus_reads_every_services_metrics_and_the_platform_gets_its_url(
    tmp_path: Path,
) -> None:
    settings = AllInOneSettings(state_dir=tmp_path, port_offset=1000)
    without = _waves(settings, tmp_path)
    assert "prometheus" not in {spec.name for wave in without for spec in wave}
    platform = next(spec for spec in without[2] if spec.name == "platform")
    assert "PLATFORM_PROMETHEUS_URL" not in platform.environment(_wiring(without), "127.0.0.1")

    waves = _waves(settings, tmp_path, prometheus=Path("/p"))
    prometheus = waves[0][-1]  # in the first wave: it sees every service come up
    assert prometheus.name == "prometheus"
    port = DEFAULT_PORTS["prometheus"] + 1000
    assert prometheus.health_url("127.0.0.1") == f"http://127.0.0.1:{port}/-/ready"
    flags = dict(arg.removeprefix("--").split("=", 1) for arg in prometheus.args)
    assert flags["binary"] == "/p"
    assert flags["listen"] == f"127.0.0.1:{port}"
    assert flags["directory"] == str(tmp_path / "prometheus")
    # every service serving /metrics (the registry's on its supervisor's port); the
    # dashboard and the metering deliverer serve none
    targets = json.loads(flags["targets"])
    assert targets == {
        name: f"127.0.0.1:{DEFAULT_PORTS[port_name] + 1000}"
        for name, port_name in {
            "platform": "platform",
            "gateway": "gateway",
            "metering": "metering",
            "credit": "credit",
            "faucet": "faucet",
            "chain": "chain",
            "kuberay": "kuberay",
            "registry": "registry_health",
        }.items()
    }
    platform = next(spec for spec in waves[2] if spec.name == "platform")
    environment = platform.environment(_wiring(waves), "127.0.0.1")
    assert environment["PLATFORM_PROMETHEUS_URL"] == f"http://127.0.0.1:{port}"


def test_prometheus_starts_under_the_supervisor_and_stops_cleanly(tmp_path: Path) -> None:
    """Started as gridweave up starts it (its configuration written, then the binary in its
    place), ready, its targets every service; SIGTERM ends it with status 0, nothing left."""
    try:
        binary = prometheus_binary()
    except PrometheusUnavailable as exc:
        fail_or_skip("Prometheus", exc)
    settings = AllInOneSettings(state_dir=tmp_path / "state", port_offset=free_port_offset())
    waves = _waves(settings, tmp_path, prometheus=binary)
    spec = waves[0][-1]
    supervisor = Supervisor(tmp_path / "logs")
    child = supervisor.add(
        spec.name,
        spec.package,
        spec.environment(_wiring(waves), settings.host),
        health_url=spec.health_url(settings.client_host),
        args=spec.args,
    )
    try:
        supervisor.start_wave([child], timeout_s=60)

        def jobs() -> set[str]:  # the targets are loaded a few seconds after /-/ready
            url = f"{settings.url('prometheus')}/api/v1/targets"
            answer = httpx.get(url, timeout=10).json()
            return {target["labels"]["job"] for target in answer["data"]["activeTargets"]}

        wait_until(lambda: jobs() == set(SCRAPED_SERVICES), timeout=30, what="every target")
        config = json.loads((settings.state_dir / "prometheus" / "prometheus.yml").read_text())
        assert config["global"]["scrape_interval"] == "5s"
    finally:
        supervisor.stop_all()
    assert child.process is not None and child.process.returncode == 0, child.log_tail()
    assert (settings.state_dir / "prometheus" / "data" / "wal").is_dir()
    assert leftover_processes(settings.state_dir) == []
