"""Warm submit-to-result latency on the all-in-one: SDK ``.remote()`` to value, and ``.map``.

``gridweave up`` runs in a temporary directory as a user runs it (every service as its own
process on real ports, the Kubernetes API, PostgreSQL, the local Ray); the first admin's
key (saved by ``up``) calls a trivial function. ``--warmup`` calls run first; then
``--calls`` sequential ``.remote()`` calls are timed from the call to the value, and a
``.map`` over ``--map`` items (the SDK's default concurrency) is timed to its last value.
Where the time goes comes from the jobs' own timestamps: submitted (the SDK's clock) ->
Allocated -> Running -> finished (the gateway's clock) -> value in hand.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import gridweave as gw
from bench.report import machine_line, write_section
from tests.support.allinone import AllInOneProcess


def add_one(x: int) -> int:
    return x + 1


@dataclass(frozen=True)
class Call:
    """One timed ``.remote()``: seconds from the call to each step."""

    total: float
    allocated: float
    running: float
    finished: float


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def _timed_call(function: gw.Function[[int], int], value: int) -> Call:
    sent = time.time()
    clock = time.perf_counter()
    handle = function.spawn(value)
    assert handle.result(timeout=120) == value + 1
    total = time.perf_counter() - clock
    job = handle.status()
    assert job.allocated_at and job.started_at and job.finished_at, job

    def after(moment: datetime) -> float:
        return moment.timestamp() - sent

    return Call(total, after(job.allocated_at), after(job.started_at), after(job.finished_at))


def measure(calls: int, warmup: int, map_items: int) -> tuple[list[Call], float]:
    workdir = Path(tempfile.mkdtemp(prefix="gw-bench-up-"))
    workdir.chmod(0o755)
    try:
        with AllInOneProcess(workdir) as platform:
            config = platform.config_file.read_text()
            api_key = config.split('api_key = "', 1)[1].split('"', 1)[0]
            gw.configure(url=platform.url("platform"), api_key=api_key)
            function = gw.function(vram="1GB", timeout="1m")(add_one)
            for i in range(warmup):
                _timed_call(function, i)
            timed = [_timed_call(function, i) for i in range(calls)]
            started = time.perf_counter()
            assert function.map(range(map_items)) == [i + 1 for i in range(map_items)]
            map_rate = map_items / (time.perf_counter() - started)
        return timed, map_rate
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def report(timed: list[Call], map_rate: float, args: argparse.Namespace) -> str:
    totals = [c.total for c in timed]

    def median_ms(values: list[float]) -> float:
        return statistics.median(values) * 1000

    steps = (
        ("submit to Allocated", [c.allocated for c in timed]),
        ("Allocated to Running", [c.running - c.allocated for c in timed]),
        ("Running to finished (the call itself)", [c.finished - c.running for c in timed]),
        ("finished to value in hand", [c.total - c.finished for c in timed]),
    )
    lines = [
        "## Warm `.remote()` latency and `.map` throughput on the all-in-one "
        "(`bench/bench_remote_latency.py`)",
        "",
        f"{machine_line()}; shared with other work, so the tail is noisy. `gridweave up` in "
        f"a temporary directory, {args.warmup} warm-up calls, then {args.calls} sequential "
        "calls of a trivial function (one simulated GPU, warm workers on).",
        "",
        "| figure | value | goal |",
        "| --- | --- | --- |",
        f"| `.remote()` p50 | {median_ms(totals):.0f} ms | <= 75 ms |",
        f"| `.remote()` p90 | {_percentile(totals, 0.9) * 1000:.0f} ms | |",
        f"| `.remote()` p99 | {_percentile(totals, 0.99) * 1000:.0f} ms | |",
        f"| `.map` over {args.map} items | {map_rate:.1f} calls/s | |",
        "",
        "Where the median call's time goes (medians of each step; the gateway's clock and "
        "the SDK's are the same machine's):",
        "",
        "| step | median |",
        "| --- | --- |",
        *(f"| {name} | {median_ms(values):.0f} ms |" for name, values in steps),
    ]
    return "\n".join(lines)


def main() -> None:
    """Run, print, and rewrite this benchmark's section of docs/benchmarks.md."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--map", type=int, default=1000)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    timed, map_rate = measure(args.calls, args.warmup, args.map)
    section = report(timed, map_rate, args)
    print(section)
    if not args.no_write:
        write_section("bench_remote_latency", section)


if __name__ == "__main__":
    main()
