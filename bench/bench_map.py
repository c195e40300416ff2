"""Per-item cost: ``.map`` and warm ``.remote()`` on the all-in-one beside plain Ray.

In one run, on this machine:

1. **Plain Ray** (a local Ray this benchmark starts and stops, token auth off so it leaves
   nothing in ``~/.ray``), one CPU per task: ``ray.get([f.remote(i) for i in ...])`` over
   ``--items`` trivial items; ``--sleepers`` items that each sleep 0.1 s; and
   ``--calls`` sequential single calls (p50, p99).
2. **Gridweave** (``gridweave up`` in a temporary directory, every service its own
   process, jobs in their containers): ``.map`` over the same trivial items on
   ``--concurrency`` workers, the sleepers on the same, and warm ``.remote()`` p50 and p99.

CPU-seconds per trivial item count every process of the machine (``/proc/stat``, user and
system) over the whole ``.map`` (or the whole ``ray.get``), divided by the items: the
platform's services, the workers and their containers included.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cloudpickle

import gridweave as gw
from bench.report import machine_line, write_section
from tests.support.allinone import AllInOneProcess

_TICKS = os.sysconf("SC_CLK_TCK")


def add_one(x: int) -> int:
    return x + 1


def nap(x: int) -> int:
    time.sleep(0.1)
    return x


def machine_cpu_seconds() -> float:
    """User + system CPU seconds of the whole machine since boot."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system = (int(v) for v in fields[:3])
    return (user + nice + system) / _TICKS


@dataclass(frozen=True)
class Throughput:
    """Items per second and CPU-seconds per item of one batch."""

    items: int
    seconds: float
    cpu_seconds: float

    @property
    def rate(self) -> float:
        return self.items / self.seconds

    @property
    def cpu_per_item(self) -> float:
        return self.cpu_seconds / self.items


def timed_batch(items: int, run: Callable[[], Any]) -> Throughput:
    cpu = machine_cpu_seconds()
    clock = time.perf_counter()
    run()
    return Throughput(items, time.perf_counter() - clock, machine_cpu_seconds() - cpu)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


@dataclass(frozen=True)
class Figures:
    trivial: Throughput
    sleepers: Throughput
    calls: list[float]


def plain_ray(items: int, sleepers: int, calls: int) -> Figures:
    """Plain Ray on a local cluster of its own, one CPU per task."""
    os.environ["RAY_AUTH_MODE"] = "disabled"  # no token left in ~/.ray for later users
    import ray

    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    try:
        remote_add = ray.remote(num_cpus=1)(add_one)
        remote_nap = ray.remote(num_cpus=1)(nap)
        ray.get([remote_add.remote(i) for i in range(100)])  # warm the workers
        trivial = timed_batch(items, lambda: ray.get([remote_add.remote(i) for i in range(items)]))
        slept = timed_batch(
            sleepers, lambda: ray.get([remote_nap.remote(i) for i in range(sleepers)])
        )
        single = []
        for i in range(calls):
            clock = time.perf_counter()
            ray.get(remote_add.remote(i))
            single.append(time.perf_counter() - clock)
        return Figures(trivial, slept, single)
    finally:
        ray.shutdown()
        os.environ.pop("RAY_AUTH_MODE", None)


def gridweave_figures(items: int, sleepers: int, calls: int, concurrency: int) -> Figures:
    """The same on ``gridweave up``: ``.map`` on ``concurrency`` workers, warm ``.remote()``."""
    workdir = Path(tempfile.mkdtemp(prefix="gw-bench-map-"))
    workdir.chmod(0o755)
    try:
        with AllInOneProcess(workdir) as platform:
            config = platform.config_file.read_text()
            api_key = config.split('api_key = "', 1)[1].split('"', 1)[0]
            gw.configure(url=platform.url("platform"), api_key=api_key)
            remote_add = gw.function(vram="1GB", timeout="10m")(add_one)
            remote_nap = gw.function(vram="1GB", timeout="10m")(nap)
            assert remote_add.map(range(100), concurrency=concurrency)[-1] == 100  # warm up
            trivial = timed_batch(
                items,
                lambda: _checked(remote_add.map(range(items), concurrency=concurrency), items, 1),
            )
            slept = timed_batch(
                sleepers,
                lambda: _checked(
                    remote_nap.map(range(sleepers), concurrency=concurrency), sleepers, 0
                ),
            )
            for i in range(10):
                remote_add.remote(i)
            single = []
            for i in range(calls):
                clock = time.perf_counter()
                assert remote_add.remote(i) == i + 1
                single.append(time.perf_counter() - clock)
            return Figures(trivial, slept, single)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _checked(values: list[int], items: int, offset: int) -> None:
    assert values == [i + offset for i in range(items)]


def report(ray_figures: Figures, ours: Figures, args: argparse.Namespace) -> str:
    def ms(value: float) -> str:
        return f"{value * 1000:.1f} ms"

    ray_trivial, our_trivial = ray_figures.trivial, ours.trivial
    lines = [
        "## Per-item cost: `.map` and warm `.remote()` beside plain Ray (`bench/bench_map.py`)",
        "",
        f"{machine_line()}. Plain Ray: a local Ray of this "
        "run, one CPU per task. Gridweave: `gridweave up` in a temporary directory, jobs in "
        f"their containers (runc), `.map` on {args.concurrency} workers of one simulated GPU.",
        "",
        "| figure | Gridweave | plain Ray | ratio | goal |",
        "| --- | --- | --- | --- | --- |",
        f"| `.map` over {args.items} trivial items | {our_trivial.rate:.0f} items/s "
        f"| {ray_trivial.rate:.0f} items/s | {our_trivial.rate / ray_trivial.rate:.2f}x "
        "| >= 1,000 items/s and >= 0.5x |",
        "| CPU-seconds per trivial item (all processes) "
        f"| {our_trivial.cpu_per_item * 1000:.2f} ms "
        f"| {ray_trivial.cpu_per_item * 1000:.2f} ms "
        f"| {our_trivial.cpu_per_item / ray_trivial.cpu_per_item:.2f}x | |",
        f"| `.map` over {args.sleepers} items of 0.1 s each | {ours.sleepers.seconds:.1f} s "
        f"| {ray_figures.sleepers.seconds:.1f} s "
        f"| {ours.sleepers.seconds / ray_figures.sleepers.seconds:.2f}x | |",
        f"| warm single call, p50 ({args.calls} calls) | {ms(statistics.median(ours.calls))} "
        f"| {ms(statistics.median(ray_figures.calls))} "
        f"| {statistics.median(ours.calls) / statistics.median(ray_figures.calls):.0f}x "
        "| <= 75 ms |",
        f"| warm single call, p99 | {ms(percentile(ours.calls, 0.99))} "
        f"| {ms(percentile(ray_figures.calls, 0.99))} | | |",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--sleepers", type=int, default=1_000)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # as a user's own module
    ray_figures = plain_ray(args.items, args.sleepers, args.calls)
    ours = gridweave_figures(args.items, args.sleepers, args.calls, args.concurrency)
    section = report(ray_figures, ours, args)
    print(section)
    if not args.no_write:
        write_section("bench_map", section)


if __name__ == "__main__":
    main()
