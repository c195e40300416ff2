"""Proxied (crd_client -> kuberay-service -> apiserver) vs direct controller calls.

Run from the repository root: ``.venv/bin/python -m bench.bench_proxy``. Starts the real
Kubernetes API server (as the tests do) and kuberay-service as its own process on loopback,
then times create and a setter both ways, interleaved in the same run, and rewrites its
section of ``docs/benchmarks.md``. Goal: proxied <= 1.5x direct.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.report import machine_line, write_section
from gridweave_controller import CrdClient, crd
from job_gateway.crd_client import ProxiedClient
from tests.support.http_server import free_port
from tests.support.kubeapi import REPO_ROOT, kube_api

GOAL = 1.5
TOKEN = "bench-internal-token-" + uuid.uuid4().hex


@dataclass(frozen=True)
class Result:
    """Median latency of one operation both ways."""

    name: str
    direct_ms: float
    proxied_ms: float

    @property
    def ratio(self) -> float:
        """Proxied over direct."""
        return self.proxied_ms / self.direct_ms


@contextmanager
def kuberay_process(kubeconfig: Path, namespace: str) -> Iterator[str]:
    """kuberay-service as its own process (``python -m kuberay_service``); yield its URL."""
    port = free_port()
    env = {
        **os.environ,
        "KUBERAY_KUBECONFIG": str(kubeconfig),
        "KUBERAY_NAMESPACE": namespace,
        "KUBERAY_PORT": str(port),
        "KUBERAY_HOST": "127.0.0.1",
        "GRIDWEAVE_INTERNAL_TOKEN": TOKEN,
    }
    proc = subprocess.Popen([sys.executable, "-m", "kuberay_service"], env=env, cwd=REPO_ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("kuberay-service did not start")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def _timed(call: Callable[[int], object], i: int) -> float:
    start = time.perf_counter()
    call(i)
    return (time.perf_counter() - start) * 1000


def bench(
    name: str, direct: Callable[[int], object], proxied: Callable[[int], object], rounds: int
) -> Result:
    """Interleave the two ways ``rounds`` times; medians in milliseconds."""
    direct_ms, proxied_ms = [], []
    for i in range(rounds):
        direct_ms.append(_timed(direct, i))
        proxied_ms.append(_timed(proxied, i))
    return Result(name, statistics.median(direct_ms), statistics.median(proxied_ms))


def table(results: list[Result]) -> str:
    """A Markdown table of the results."""
    lines = ["| operation | direct ms | proxied ms | ratio |", "| --- | ---: | ---: | ---: |"]
    for r in results:
        flag = "" if r.ratio <= GOAL else " (over goal)"
        lines.append(f"| {r.name} | {r.direct_ms:.2f} | {r.proxied_ms:.2f} | {r.ratio:.2f}{flag} |")
    return "\n".join(lines)


def main() -> None:
    """Run the benchmark and report."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=150, help="timed calls per operation")
    parser.add_argument("--no-doc", action="store_true", help="do not write docs/benchmarks.md")
    args = parser.parse_args()
    namespace = f"bench-{uuid.uuid4().hex[:8]}"
    with kube_api() as api, kuberay_process(api.kubeconfig, namespace) as url:
        direct = crd.init_k8s_client(kubeconfig=api.kubeconfig, namespace=namespace)
        proxied = ProxiedClient()
        proxied.connect(url, TOKEN)

        def create(client: CrdClient | ProxiedClient, prefix: str) -> Callable[[int], object]:
            return lambda i: client.create_job(f"{prefix}-{i}", "bench", "file:///f", vram_mb=1)

        def allocate(client: CrdClient | ProxiedClient, prefix: str) -> Callable[[int], object]:
            return lambda i: client.set_job_allocated(f"{prefix}-{i}", "gpu-1", [0])

        for warm in range(5):  # connections, caches and the server's first requests
            create(direct, "warm-d")(warm)
            create(proxied, "warm-p")(warm)
        results = [
            bench("create job", create(direct, "d"), create(proxied, "p"), args.rounds),
            bench("set_job_allocated", allocate(direct, "d"), allocate(proxied, "p"), args.rounds),
        ]
        proxied.close()
    print(table(results))
    worst = max(results, key=lambda r: r.ratio)
    section = "\n".join(
        [
            "## kuberay-service: proxied vs direct (`bench/bench_proxy.py`)",
            "",
            f"{machine_line()}. The real apiserver + etcd on loopback; kuberay-service as its "
            "own process (`python -m kuberay_service`, uvicorn, one worker). Direct: "
            "`gridweave_controller.crd` over the official client. Proxied: "
            "`job_gateway.crd_client` -> HTTP -> kuberay-service -> the same typed client. "
            f"Interleaved, {args.rounds} calls each; medians. Goal: ratio <= {GOAL}.",
            "",
            table(results),
            "",
            f"Worst ratio: {worst.ratio:.2f} ({worst.name}).",
        ]
    )
    if not args.no_doc:
        write_section("bench_proxy", section)


if __name__ == "__main__":
    main()
