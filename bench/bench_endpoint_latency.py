"""Endpoint latency on the all-in-one: the platform's overhead on a warm call, cold start from
zero, and the time to scale to zero.

``gridweave up`` runs in a temporary directory as a user runs it (every service its own
process, the local Ray with Ray Serve). A custom endpoint (a class whose ``work`` method
sleeps ``--work-ms``, 10 ms by default) is deployed through the SDK with one replica that
never scales to zero. Then ``--calls`` rounds, each one call straight to its Ray Serve
route (the URL the gateway reads from the endpoint's status) and one through the platform
(``/v1/endpoints/{name}/work`` with the API key), both over kept-alive connections of one
client, interleaved so both see the same machine. The overhead is the ratio of medians
(goal <= 1.2x).

Then a second endpoint of the same class with ``--idle`` seconds of idleness: one call,
then the time until it is Stopped with reason Idle (scale to zero; the idle setting is
part of it), then one call that wakes it: the cold start, to its answer.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import cloudpickle
import httpx

import gridweave as gw
from bench.report import machine_line, write_section
from gridweave_allinone.secrets import internal_token
from gridweave_clients.gateway import GatewayClient
from gridweave_clients.gateway import endpoints as gateway_ops
from tests.support.allinone import AllInOneProcess


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


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def _timed_post(http: httpx.Client, url: str, body: object, headers: dict[str, str]) -> float:
    clock = time.perf_counter()
    response = http.post(url, json=body, headers=headers)
    elapsed = time.perf_counter() - clock
    assert response.status_code == 200, response.text
    return elapsed


def measure(args: argparse.Namespace) -> Figures:
    workdir = Path(tempfile.mkdtemp(prefix="gw-bench-endpoints-"))
    workdir.chmod(0o755)
    try:
        with AllInOneProcess(workdir) as platform:
            config = platform.config_file.read_text()
            api_key = config.split('api_key = "', 1)[1].split('"', 1)[0]
            gw.configure(url=platform.url("platform"), api_key=api_key)
            token = internal_token(platform.state_dir)
            with GatewayClient(platform.url("gateway"), token, role="admin") as gateway:
                return _measure(args, api_key, gateway)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _measure(args: argparse.Namespace, api_key: str, gateway: GatewayClient) -> Figures:
    warm_class = gw.endpoint(vram="1GB", min_replicas=1, idle=0)(Sleeper)
    warm = warm_class.deploy("bench-warm")
    status = warm.wait_until_running(timeout=900)
    direct_url = gateway.run(gateway_ops.get_endpoint(status.endpoint_id)).url
    assert direct_url, status
    body = [args.work_ms]
    key = {"Authorization": f"Bearer {api_key}"}
    direct: list[float] = []
    proxied: list[float] = []
    with httpx.Client(timeout=60) as http:
        for _ in range(args.warmup):
            _timed_post(http, f"{direct_url}/work", body, {})
            _timed_post(http, f"{warm.url}/work", body, key)
        for _ in range(args.calls):
            direct.append(_timed_post(http, f"{direct_url}/work", body, {}))
            proxied.append(_timed_post(http, f"{warm.url}/work", body, key))
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
        cold = _timed_post(http, f"{idle.url}/work", [1.0], key)
    idle.stop()
    return Figures(direct, proxied, to_zero, cold)


def report(figures: Figures, args: argparse.Namespace) -> str:
    direct, proxied = figures.direct, figures.proxied
    direct_p50 = statistics.median(direct)
    proxied_p50 = statistics.median(proxied)
    to_zero, cold = figures.to_zero, figures.cold
    lines = [
        "## Endpoint latency on the all-in-one (`bench/bench_endpoint_latency.py`)",
        "",
        f"{machine_line()}; shared with other work. `gridweave up` in a temporary directory; "
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
        f"Scale to zero and back (idle setting {args.idle} s):",
        "",
        "| figure | value |",
        "| --- | --- |",
        f"| last call to Stopped (Idle) | {to_zero:.1f} s ({to_zero - args.idle:.1f} s past "
        "the idle setting) |",
        f"| cold start: a call to a scaled-to-zero endpoint, to its answer | {cold:.1f} s |",
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
    args = parser.parse_args()
    # the endpoint's class travels by value, as a user's own module's would
    if __name__ != "__main__":  # __main__ travels by value already
        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    section = report(measure(args), args)
    print(section)
    if not args.no_write:
        write_section("bench_endpoint_latency", section)


if __name__ == "__main__":
    main()
