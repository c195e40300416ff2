"""Endpoint latency: the platform's overhead on a warm call, cold start from zero, and the
time to scale to zero.

The stack is the tests' own, each part real: PostgreSQL, the Kubernetes API server, the
three-node Ray of the execution tests (simulated GPUs), credit_service, metering_service,
the gateway serving endpoints on Ray Serve (one process), and the platform as its own
process, as an operator runs it, on loopback ports; the timing client is a process of its
own too. A custom endpoint (a class whose ``work`` method sleeps ``--work-ms``, 10 ms
by default) is deployed through the SDK with one replica that never scales to zero. Then
``--calls`` rounds, each one call straight to its Ray Serve route (the URL the gateway
reads from the endpoint's status) and one through the platform
(``/v1/endpoints/{name}/work`` with the API key), over kept-alive connections of one
client, interleaved so both see the same machine. The overhead is the ratio of medians
(goal <= 1.2x).

Then a second endpoint of the same class with ``--idle`` seconds of idleness: one call,
then the time until it is Stopped with reason Idle (scale to zero; the idle setting is
part of it), then one call that wakes it: the cold start, to its answer. The same for the
test model (a tiny GPT-2 built here, ``transformers`` mode): the cold start is a streamed
completion's request to its first token.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cloudpickle
import httpx
import pytest

import gridweave as gw
from bench.report import machine_line, write_section
from gridweave_clients.gateway import GatewayClient
from gridweave_clients.gateway import endpoints as gateway_ops
from gridweave_runtime.serve_key import SERVE_KEY_HEADER, serve_key
from job_gateway.execution import ExecutionSettings
from platform_service.app import create_app
from platform_service.services.bootstrap import create_admin_key
from platform_service.services.keys import api_key_secret
from platform_service.settings import PlatformSettings
from tests.job_gateway.execution_factories import INVENTORY_YAML, ray_test_cluster
from tests.job_gateway.gateway_factories import running_gateway
from tests.metering_service.factories import metering_settings, running_metering
from tests.platform_service.endpoint_factories import tiny_gpt2
from tests.support.credentials import service_auth, service_auth_env
from tests.support.credit_server import INTERNAL_TOKEN, running_credit_service
from tests.support.http_server import free_port
from tests.support.kubeapi import kube_api
from tests.support.postgres import start_test_postgres
from tests.support.service_process import running_service_process


class Sleeper:
    """The benchmark's endpoint: ``work`` answers after ``ms`` milliseconds."""

    def work(self, ms: float = 10.0) -> float:
        time.sleep(ms / 1000)
        return ms


@dataclass(frozen=True)
class Figures:
    """Seconds: each warm call straight and through the platform; to zero; the cold call."""

    direct: list[float]
    proxied: list[float]
    to_zero: float
    cold: float
    model_to_zero: float
    model_first_token: float


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def _timed_post(http: httpx.Client, url: str, body: object, headers: dict[str, str]) -> float:
    clock = time.perf_counter()
    response = http.post(url, json=body, headers=headers)
    elapsed = time.perf_counter() - clock
    assert response.status_code == 200, response.text
    return elapsed


@contextmanager
def serving_stack(workdir: Path) -> Iterator[tuple[str, str, GatewayClient]]:
    """The stack (see the module); (the platform's URL, a funded user's key, the gateway)."""
    with ExitStack() as stack:
        postgres = stack.enter_context(start_test_postgres())
        kubeapi = stack.enter_context(kube_api())
        stack.enter_context(ray_test_cluster())
        credit = stack.enter_context(running_credit_service(postgres, workdir / "credit"))
        metering_db = postgres.create_database("gwmetering")
        metering = stack.enter_context(
            running_metering(metering_settings(metering_db, credit.url, state_dir=workdir))
        )
        patch = stack.enter_context(pytest.MonkeyPatch.context())
        patch.setenv("GATEWAY_SERVE_PORT", str(free_port()))
        patch.setenv("GATEWAY_ENDPOINT_PROBE_SECONDS", "0.2")
        gateway = stack.enter_context(
            running_gateway(
                kubeapi,
                workdir / "gateway",
                inventory_yaml=INVENTORY_YAML,
                execution=ExecutionSettings(executor_poll_seconds=0.05),
                **service_auth(INTERNAL_TOKEN),
                metering_service_url=str(metering.base_url),
            )
        )
        platform_db = postgres.create_database("gwplatform")
        platform_url, api_key = stack.enter_context(
            platform_process(
                workdir / "platform",
                {
                    "PLATFORM_DATABASE_URL": platform_db,
                    **service_auth_env(INTERNAL_TOKEN),
                    "GRIDWEAVE_STATE_DIR": str(workdir / "platform"),
                    "PLATFORM_STORAGE_DIR": str(gateway.storage_dir),
                    "CREDIT_SERVICE_URL": credit.url,
                    "GATEWAY_URL": gateway.url,
                    "METERING_SERVICE_URL": str(metering.base_url),
                },
            )
        )
        with httpx.Client(base_url=platform_url, timeout=60) as http:
            created = http.post(
                "/v1/users",
                json={"email": "bench@example.com"},
                headers={"Authorization": f"Bearer {api_key}"},
            )
            created.raise_for_status()
        user_id = created.json()["user"]["user_id"]
        credit.fund(user_id, 10**12)
        client = stack.enter_context(GatewayClient(gateway.url, INTERNAL_TOKEN, role="admin"))
        yield platform_url, created.json()["api_key"]["api_key"], client


@contextmanager
def platform_process(state_dir: Path, env: dict[str, str]) -> Iterator[tuple[str, str]]:
    """The platform as its own process (``python -m platform_service``), as an operator runs
    it; its database migrated and its first admin's key made here first: (URL, the key)."""
    with patched_environment(env):
        app = create_app(PlatformSettings())
    try:
        with app.state.database.session() as session:
            admin = create_admin_key(
                session,
                hmac_key=api_key_secret(app.state.settings),
                email="admin@example.com",
                key_name="bench",
            )
    finally:
        app.state.database.dispose()
    with running_service_process(
        "platform_service", env, prefix="PLATFORM_", log=state_dir / "platform.log"
    ) as (url, _port):
        yield url, admin.api_key


@contextmanager
def patched_environment(env: dict[str, str]) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        yield


def measure(args: argparse.Namespace) -> Figures:
    workdir = Path(tempfile.mkdtemp(prefix="gw-bench-endpoints-"))
    for part in ("credit", "gateway", "platform"):
        (workdir / part).mkdir()
    try:
        # under the platform's default model root (GRIDWEAVE_STATE_DIR/models)
        model_dir = tiny_gpt2(workdir / "platform" / "models" / "tiny-gpt2")
        with serving_stack(workdir) as (platform_url, api_key, gateway):
            gw.configure(url=platform_url, api_key=api_key)
            return _measure(args, api_key, gateway, model_dir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _time_calls(direct_url: str, proxied_url: str, api_key: str, args: argparse.Namespace) -> Any:
    """The interleaved rounds, timed by a process of their own (see the module)."""
    spec = {
        "direct": f"{direct_url}/work",
        "proxied": f"{proxied_url}/work",
        "key": api_key,
        "serve_key": serve_key(INTERNAL_TOKEN),  # what the platform sends Serve, too
        "calls": args.calls,
        "warmup": args.warmup,
        "ms": args.work_ms,
    }
    command = [sys.executable, "-m", "bench.bench_endpoint_latency", "--client", json.dumps(spec)]
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=1800)
    return json.loads(done.stdout)


def run_client(spec: dict[str, Any]) -> None:
    """The timing client: print the seconds of each direct and each proxied call as JSON."""
    body = [spec["ms"]]
    key = {"Authorization": f"Bearer {spec['key']}"}
    serve = {SERVE_KEY_HEADER: spec["serve_key"]}
    direct: list[float] = []
    proxied: list[float] = []
    with httpx.Client(timeout=60) as http:
        for _ in range(spec["warmup"]):
            _timed_post(http, spec["direct"], body, serve)
            _timed_post(http, spec["proxied"], body, key)
        for _ in range(spec["calls"]):
            direct.append(_timed_post(http, spec["direct"], body, serve))
            proxied.append(_timed_post(http, spec["proxied"], body, key))
    print(json.dumps({"direct": direct, "proxied": proxied}))


def _measure(
    args: argparse.Namespace, api_key: str, gateway: GatewayClient, model_dir: Path
) -> Figures:
    warm_class = gw.endpoint(vram="1GB", min_replicas=1, idle=0)(Sleeper)
    warm = warm_class.deploy("bench-warm")
    status = warm.wait_until_running(timeout=900)
    direct_url = gateway.run(gateway_ops.get_endpoint(status.endpoint_id)).url
    assert direct_url, status
    timed = _time_calls(direct_url, warm.url, api_key, args)
    direct, proxied = timed["direct"], timed["proxied"]
    warm.stop()

    idle_class = gw.endpoint(vram="1GB", idle=args.idle)(Sleeper)
    idle = idle_class.deploy("bench-idle")
    idle.wait_until_running(timeout=900)
    assert idle.call("work", 1.0) == 1.0
    last_call = time.perf_counter()
    while True:
        state = idle.status()
        if state.phase == "Stopped":
            assert state.reason == "Idle", state
            break
        time.sleep(0.1)
    to_zero = time.perf_counter() - last_call
    with httpx.Client(timeout=900) as http:
        cold = _timed_post(http, f"{idle.url}/work", [1.0], {"Authorization": f"Bearer {api_key}"})
    idle.stop()

    model = gw.deploy("bench-model", model_ref=str(model_dir), vram="1GB", idle=args.idle)
    model.wait_until_running(timeout=900)
    _first_token(model, api_key)
    model_to_zero = _time_to_zero(model)
    first_token = _first_token(model, api_key)
    model.stop()
    return Figures(direct, proxied, to_zero, cold, model_to_zero, first_token)


def _time_to_zero(endpoint: gw.Endpoint) -> float:
    """Seconds from now until the endpoint is Stopped with reason Idle."""
    started = time.perf_counter()
    while True:
        state = endpoint.status()
        if state.phase == "Stopped":
            assert state.reason == "Idle", state
            return time.perf_counter() - started
        time.sleep(0.1)


def _first_token(endpoint: gw.Endpoint, api_key: str) -> float:
    """Seconds from a streamed completion's request to its first token (an SSE event)."""
    body = {"model": "tiny", "prompt": "Hello", "max_tokens": 8, "stream": True}
    headers = {"Authorization": f"Bearer {api_key}"}
    clock = time.perf_counter()
    with (
        httpx.Client(timeout=900) as http,
        http.stream(
            "POST", f"{endpoint.openai_base_url}/completions", json=body, headers=headers
        ) as response,
    ):
        assert response.status_code == 200, response.read()
        lines = response.iter_lines()
        for line in lines:
            if line.startswith("data:"):
                first = time.perf_counter() - clock
                break
        else:
            raise AssertionError("no event")
        for _ in lines:  # the rest of the stream
            pass
    return first


def report(figures: Figures, args: argparse.Namespace) -> str:
    direct, proxied = figures.direct, figures.proxied
    direct_p50 = statistics.median(direct)
    proxied_p50 = statistics.median(proxied)
    to_zero, cold = figures.to_zero, figures.cold
    lines = [
        "## Endpoint latency (`bench/bench_endpoint_latency.py`)",
        "",
        f"{machine_line()}; shared with other work. The tests' stack, the platform and the timing "
        "client each in a process of its own; "
        f"a custom endpoint whose call sleeps {args.work_ms:g} ms, one replica, "
        f"{args.warmup} warm-up rounds, then {args.calls} interleaved rounds of one call "
        "straight to its Ray Serve route and one through the platform, one kept-alive client.",
        "",
        "| figure | direct (Ray Serve) | through the platform | goal |",
        "| --- | --- | --- | --- |",
        f"| p50 | {direct_p50 * 1000:.1f} ms | {proxied_p50 * 1000:.1f} ms | |",
        f"| p90 | {_percentile(direct, 0.9) * 1000:.1f} ms | "
        f"{_percentile(proxied, 0.9) * 1000:.1f} ms | |",
        f"| p99 | {_percentile(direct, 0.99) * 1000:.1f} ms | "
        f"{_percentile(proxied, 0.99) * 1000:.1f} ms | |",
        f"| ratio of medians | | {proxied_p50 / direct_p50:.2f}x | <= 1.2x |",
        "",
        f"The platform adds {(proxied_p50 - direct_p50) * 1000:.1f} ms at the median: the API "
        "key checked from memory (read from PostgreSQL at most every "
        "PLATFORM_API_KEY_CACHE_SECONDS), the platform's middleware, and one more HTTP hop "
        "through httpx; the direct call itself "
        f"takes {direct_p50 * 1000:.0f} ms for {args.work_ms:g} ms of work on this shared "
        "machine, so the ratio is the machine's as much as the platform's.",
        "",
        f"Scale to zero and back (idle setting {args.idle} s):",
        "",
        "| figure | value |",
        "| --- | --- |",
        "| tiny GPT-2 (transformers): last call to Stopped (Idle) | "
        f"{figures.model_to_zero:.1f} s |",
        "| tiny GPT-2: cold start, a streamed completion to a scaled-to-zero endpoint, to its "
        f"first token | {figures.model_first_token:.1f} s |",
        f"| custom class: last call to Stopped (Idle) | {to_zero:.1f} s "
        f"({to_zero - args.idle:.1f} s past the idle setting) |",
        f"| custom class: cold start, a call to a scaled-to-zero endpoint, to its answer | "
        f"{cold:.1f} s |",
    ]
    return "\n".join(lines)


def main() -> None:
    """Run, print, and rewrite this benchmark's section of docs/benchmarks.md."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--work-ms", type=float, default=10.0)
    parser.add_argument("--idle", type=int, default=10)
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--client", help=argparse.SUPPRESS)  # the timing client's own run
    args = parser.parse_args()
    if args.client:
        run_client(json.loads(args.client))
        return
    # the endpoint's class travels by value, as a user's own module's would
    if __name__ != "__main__":  # __main__ travels by value already
        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    section = report(measure(args), args)
    print(section)
    if not args.no_write:
        write_section("bench_endpoint_latency", section)


if __name__ == "__main__":
    main()
