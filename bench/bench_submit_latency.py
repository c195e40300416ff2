"""Submit-to-running latency on local Ray, warm: p50 and p99 through the gateway's HTTP API.

The real job gateway (``create_app``, direct transport to the real Kubernetes API server,
this machine's inventory: one simulated GPU) starts its local Ray head as in production
(``ray start --head`` under the state directory, no ``RAY_ADDRESS``). ``--warmup`` jobs run
first (the head, the imports and the page cache warm); then ``--jobs`` jobs are submitted
one at a time, each a function that sleeps ``--sleep`` seconds, and the latency is the time
from sending ``POST /v1/jobs`` to the first ``GET /v1/jobs/<id>`` (polled every 10 ms)
answering Running: the scheduling pass, the Allocated write and its event, the worker
actor's process start on Ray (``set_job_running`` waits for it), the Running write.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import cloudpickle
import httpx

from bench.report import machine_line, write_section
from gridweave_runtime.local_ray import ray_temp_dir
from gridweave_runtime.storage import LocalObjectStore, input_objects
from job_gateway.app import create_app
from job_gateway.execution import ExecutionSettings, connect_gateway_ray, stop_local_head
from job_gateway.inventory import InventorySettings, open_inventory_source
from job_gateway.settings import GatewaySettings
from tests.support.credentials import service_auth
from tests.support.http_server import free_port, serve_in_thread
from tests.support.kubeapi import kube_api, namespace_on_cluster

TOKEN = "bench-internal-token-" + uuid.uuid4().hex
POLL_S = 0.01


def sleeper(seconds: float) -> str:
    """The benchmark's job: sleep, return."""
    import time as clock

    clock.sleep(seconds)
    return "slept"


def submit_and_wait_running(http: httpx.Client, store: LocalObjectStore, sleep_s: float) -> float:
    """Submit one job; seconds until the API shows it Running."""
    job_id = f"lat-{uuid.uuid4().hex[:12]}"
    inputs = input_objects(job_id)
    body = {
        "job_id": job_id,
        "user_id": "bench",
        "function_ref": store.put(inputs.function, cloudpickle.dumps(sleeper)),
        "args_ref": store.put(inputs.args, cloudpickle.dumps(((sleep_s,), {}))),
        "vram_mb": 1024,
        "vendor": "any",
        "timeout_seconds": 600,
    }
    started = time.perf_counter()
    answer = http.post("/v1/jobs", json=body)
    answer.raise_for_status()
    while True:
        phase = http.get(f"/v1/jobs/{job_id}").json()["phase"]
        if phase == "Running":
            return time.perf_counter() - started
        if phase not in ("Pending", "Allocated"):
            raise RuntimeError(f"job {job_id} went {phase} before Running")
        time.sleep(POLL_S)


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


def measure(jobs: int, warmup: int, sleep_s: float, poll_s: float) -> list[float]:
    """Start the cluster and the gateway, warm up, time ``jobs`` submissions."""
    with tempfile.TemporaryDirectory(prefix="gw-lat-") as workdir, kube_api() as api:
        state = Path(os.environ.get("BENCH_STATE_DIR") or workdir)
        namespace = f"bench-lat-{uuid.uuid4().hex[:8]}"
        settings = GatewaySettings(
            **service_auth(TOKEN),
            crd_transport="direct",
            kubeconfig=api.kubeconfig,
            namespace=namespace,
            state_dir=state,
        )
        execution = ExecutionSettings(ray_port=free_port(), executor_poll_seconds=poll_s)
        store = LocalObjectStore(state / "objects")
        app = create_app(settings, execution=execution)
        try:
            # the head first, as the gateway would (its start then finds Ray connected):
            # on a loaded machine the head's start outlasts the test server's start timeout
            connect_gateway_ray(
                None,
                execution,
                state_dir=state,
                inventory=open_inventory_source(InventorySettings()).read_inventory(),
            )
            with (
                namespace_on_cluster(api.kubeconfig, namespace, delete=False),
                serve_in_thread(app, settings) as url,
                httpx.Client(
                    base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60
                ) as http,
            ):
                for _ in range(warmup):
                    submit_and_wait_running(http, store, sleep_s)
                return [submit_and_wait_running(http, store, sleep_s) for _ in range(jobs)]
        finally:
            stop_local_head(ray_temp_dir(state))


def report(latencies: list[float], args: argparse.Namespace) -> str:
    """The markdown section."""
    ms = [value * 1000 for value in latencies]
    return "\n".join(
        [
            "## Submit-to-running latency on local Ray (`bench/bench_submit_latency.py`)",
            "",
            f"{machine_line()}; shared with other sessions' work. The gateway over HTTP, "
            "the real apiserver (direct transport), its own local Ray head; "
            f"{args.warmup} warm-up jobs, then {args.jobs} jobs one at a time (each sleeps "
            f"{args.sleep} s), executor poll {args.poll} s, API polled every 10 ms.",
            "",
            "| jobs | p50 ms | p99 ms | mean ms | min ms | max ms |",
            "| ---: | ---: | ---: | ---: | ---: | ---: |",
            f"| {len(ms)} | {percentile(ms, 0.50):.0f} | {percentile(ms, 0.99):.0f} | "
            f"{statistics.fmean(ms):.0f} | {min(ms):.0f} | {max(ms):.0f} |",
        ]
    )


def main() -> None:
    """Run, print, and rewrite the section of docs/benchmarks.md."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--sleep", type=float, default=0.2)
    parser.add_argument("--poll", type=float, default=ExecutionSettings().executor_poll_seconds)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    latencies = measure(args.jobs, args.warmup, args.sleep, args.poll)
    print(" ".join(f"{value * 1000:.0f}" for value in latencies))
    section = report(latencies, args)
    print(section)
    if not args.no_write:
        write_section("bench_submit_latency", section)


if __name__ == "__main__":
    main()
