"""What the job sandbox costs: a container's start alone, and a warm ``.remote()`` end to end.

1. **Container start, and a warm container's run**: the same trivial function run
   ``--starts`` times through ``job_gateway.sandbox`` as a worker runs it (bytes in, result
   bytes out), alternating runc with the runtime ``none`` (the runner as a plain child
   process: the same protocol without isolation): once starting a new container (or
   process) for each run, once in the warm one; p50 of each.
2. **Warm ``.remote()``**: two ``gridweave up`` (as ``bench_remote_latency`` runs it) side
   by side, one with ``GATEWAY_SANDBOX_RUNTIME=none`` and one with runc, ``--warmup`` calls,
   then ``--calls`` sequential ``.remote()`` calls each, alternated between them (a busy
   machine weighs on both alike); p50 of each and their ratio (the goal: sandboxed <= 1.15x
   unsandboxed).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import cloudpickle

import gridweave as gw
from bench.report import machine_line, write_section
from job_gateway.sandbox.attempt import warm_containers
from tests.support.allinone import AllInOneProcess
from tests.support.sandbox import run_function, sandbox_config


def add_one(x: int) -> int:
    return x + 1


def container_runs(count: int, *, cold: bool) -> dict[str, list[float]]:
    """Seconds per run of ``add_one`` in a container (runc) and unsandboxed (none); each in
    a new one (``cold``: the start included) or in the warm one."""
    runc = sandbox_config()
    plain = dataclasses.replace(runc, runtime="none")
    timings: dict[str, list[float]] = {"runc": [], "none": []}
    for _ in range(count):
        for name, config in (("runc", runc), ("none", plain)):
            if cold:
                warm_containers.close()
            clock = time.perf_counter()
            assert run_function(config, add_one, 1).value == 2
            timings[name].append(time.perf_counter() - clock)
    warm_containers.close()
    return timings


@contextmanager
def platform_with(runtime: str) -> Iterator[tuple[Any, str, str]]:
    """``add_one`` as a function of a fresh all-in-one whose jobs run with ``runtime``."""
    os.environ["GATEWAY_SANDBOX_RUNTIME"] = runtime
    workdir = Path(tempfile.mkdtemp(prefix="gw-bench-sandbox-"))
    workdir.chmod(0o755)
    try:
        with AllInOneProcess(workdir) as platform:
            os.environ.pop("GATEWAY_SANDBOX_RUNTIME", None)
            config = platform.config_file.read_text()
            api_key = config.split('api_key = "', 1)[1].split('"', 1)[0]
            yield gw.function(vram="1GB", timeout="1m")(add_one), platform.url("platform"), api_key
    finally:
        os.environ.pop("GATEWAY_SANDBOX_RUNTIME", None)
        shutil.rmtree(workdir, ignore_errors=True)


def remote_calls(calls: int, warmup: int) -> dict[str, list[float]]:
    """Seconds from ``.remote()`` to the value on two all-in-ones running side by side, one
    with the runtime ``none`` and one with runc, their calls alternated (so both see the
    same machine, however busy it is)."""
    timings: dict[str, list[float]] = {"none": [], "runc": []}
    with platform_with("none") as plain, platform_with("runc") as sandboxed:
        platforms = {"none": plain, "runc": sandboxed}
        for i in range(warmup + calls):
            for name, (function, url, api_key) in platforms.items():
                gw.configure(url=url, api_key=api_key)
                clock = time.perf_counter()
                assert function.remote(i) == i + 1
                if i >= warmup:
                    timings[name].append(time.perf_counter() - clock)
    return timings


def _ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--starts", type=int, default=50)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # as a user's own module
    starts = container_runs(args.starts, cold=True)
    warm = container_runs(args.starts, cold=False)
    remote = remote_calls(args.calls, args.warmup)
    plain, sandboxed = remote["none"], remote["runc"]
    lines = [
        f"{machine_line()}.",
        "",
        "| what | runtime none (no sandbox) | runc (sandbox) | ratio |",
        "| --- | --- | --- | --- |",
        f"| a new container (process) and one run of a trivial function, p50 "
        f"({args.starts} each, alternated) | {_ms(starts['none']):.1f} ms "
        f"| {_ms(starts['runc']):.1f} ms | {_ms(starts['runc']) / _ms(starts['none']):.2f}x |",
        f"| one run in the warm container (process), p50 ({args.starts} each, alternated) "
        f"| {_ms(warm['none']):.1f} ms | {_ms(warm['runc']):.1f} ms "
        f"| {_ms(warm['runc']) / _ms(warm['none']):.2f}x |",
        f"| warm `.remote()` through `gridweave up`, p50 ({args.calls} calls each, "
        f"{args.warmup} warm-up, two platforms side by side, alternated) "
        f"| {_ms(plain):.1f} ms | {_ms(sandboxed):.1f} ms "
        f"| {_ms(sandboxed) / _ms(plain):.2f}x |",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section("Job sandbox (`bench_sandbox`)", text)


if __name__ == "__main__":
    main()
