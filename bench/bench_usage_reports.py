"""Usage reports after a crash: finished, unreported jobs recorded with metering and marked.

Run from the repository root: ``.venv/bin/python -m bench.bench_usage_reports``. What it
measures is in ``DESCRIPTION``, which also heads its section of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import tempfile
import time
import uuid
from pathlib import Path

from bench.gateway_rig import StaticInventory, create_concurrently, load_average
from bench.gateway_rig import simulated_inventory as inventory_of
from bench.report import machine_line, write_section
from gridweave_clients import RetryPolicy
from gridweave_clients.metering import AsyncMeteringClient
from gridweave_controller import aio
from gridweave_runtime.storage import LocalObjectStore
from job_gateway.gateway import Gateway
from job_gateway.settings import GatewaySettings
from metering_service.app import create_app as create_metering_app
from metering_service.settings import MeteringSettings
from tests.support.credentials import service_auth
from tests.support.credit_server import INTERNAL_TOKEN, CreditServer, running_credit_service
from tests.support.http_server import serve_in_thread
from tests.support.kubeapi import kube_api, namespace_for_test
from tests.support.postgres import start_test_postgres

DESCRIPTION = """\
A gateway starts over a namespace holding N Completed jobs (one 8 GiB slice of a
simulated 80 GiB NVIDIA GPU each, a credit hold placed for each) whose usage was never
reported, as after a crash. Timed: from the start (the informers' first list hands every
job to the reporter) until every job carries its UsageReported mark. Each report is
metering's `POST /v1/usage` (a row, and the hold settled with credit_service over HTTP)
and the job's mark (one GET and one PATCH on the apiserver), `concurrency` at a time. All
real: the Kubernetes API server, PostgreSQL (metering and credit), both services under
uvicorn in this process's threads, the gateway on its own asyncio loop (direct CRDs)."""


async def report_all(
    kubeconfig: Path, namespace: str, metering_url: str, jobs: int, concurrency: int, workdir: Path
) -> float:
    """Seconds from the gateway's start until every job is marked reported."""
    crd = await aio.connect(kubeconfig=kubeconfig, namespace=namespace)
    metering = AsyncMeteringClient(
        metering_url, INTERNAL_TOKEN, timeout=15.0, retry=RetryPolicy(attempts=1)
    )
    settings = GatewaySettings(
        **service_auth(INTERNAL_TOKEN),
        state_dir=workdir,
        pass_interval_seconds=60.0,
        usage_report_concurrency=concurrency,
    )
    gateway = Gateway(
        settings,
        crd=crd,
        inventory_source=StaticInventory(inventory_of(max(1, jobs // 8))),
        store=LocalObjectStore(workdir / "objects"),
        metering=metering,
    )
    try:
        started = time.perf_counter()
        await gateway.start()
        assert gateway.usage is not None
        while gateway.usage.waiting():
            await asyncio.sleep(0.02)
        return time.perf_counter() - started
    finally:
        await gateway.stop()
        await metering.aclose()
        await crd.close()
        await asyncio.sleep(0.25)  # TLS connections to the apiserver finish closing


async def finish_jobs(kubeconfig: Path, namespace: str, credit: CreditServer, jobs: int) -> str:
    """N Completed jobs of one new user, each with its hold; the user id."""
    user_id = f"bench-{uuid.uuid4().hex[:8]}"
    await asyncio.to_thread(credit.fund, user_id, 10**12)
    crd = await aio.connect(kubeconfig=kubeconfig, namespace=namespace)
    try:

        async def one(serial: int) -> None:
            job_id = f"job-{serial:06d}-{uuid.uuid4().hex[:6]}"
            await asyncio.to_thread(credit.place_hold, user_id, 1_000_000, job_id)
            await crd.create_job(job_id, user_id, "file:///f.pkl", vram_mb=8192, vendor="nvidia")
            await crd.set_job_allocated(
                job_id, f"node-{serial // 8 % max(1, jobs // 8):04d}", [serial % 8]
            )
            await crd.set_job_running(job_id)
            await crd.set_job_completed(job_id, 12.5)

        await create_concurrently([functools.partial(one, s) for s in range(jobs)])
    finally:
        await crd.close()
        await asyncio.sleep(0.25)
    return user_id


def main() -> None:
    """Measure, print, and rewrite this benchmark's section of the docs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--no-write", action="store_true", help="print only")
    arguments = parser.parse_args()
    rows = []
    with (
        tempfile.TemporaryDirectory() as scratch,
        kube_api() as api,
        start_test_postgres() as postgres,
        running_credit_service(postgres, Path(scratch) / "credit") as credit,
    ):
        database = postgres.create_database("gwmetering")
        app = create_metering_app(
            MeteringSettings(
                database_url=database,
                **service_auth(INTERNAL_TOKEN),
                credit_service_url=credit.url,
                state_dir=Path(scratch) / "metering",
                hold_sweep_seconds=0,  # no gateway here: the holds are this benchmark's
            )
        )
        try:
            with serve_in_thread(app, app.state.settings) as metering_url:
                for concurrency in arguments.concurrency:
                    namespace = f"bench-usage-{uuid.uuid4().hex[:8]}"
                    with namespace_for_test(api, namespace):
                        asyncio.run(finish_jobs(api.kubeconfig, namespace, credit, arguments.jobs))
                        load = load_average()
                        workdir = Path(scratch) / namespace
                        workdir.mkdir()
                        seconds = asyncio.run(
                            report_all(
                                api.kubeconfig,
                                namespace,
                                metering_url,
                                arguments.jobs,
                                concurrency,
                                workdir,
                            )
                        )
                    rows.append((concurrency, seconds, load))
        finally:
            app.state.database.dispose()
    lines = [
        "| unreported jobs | concurrency | seconds to all marked | reports/s | load average |",
        "| ---: | ---: | ---: | ---: | ---: |",
    ]
    for concurrency, seconds, load in rows:
        lines.append(
            f"| {arguments.jobs:,} | {concurrency} | {seconds:.2f} "
            f"| {arguments.jobs / seconds:,.0f} | {load} |"
        )
    table = "\n".join(lines)
    print(table)
    if not arguments.no_write:
        section = "\n\n".join(
            [
                "## Usage reports after a crash (`bench/bench_usage_reports.py`)",
                f"{machine_line()} (2 shared cores).",
                DESCRIPTION,
                table,
            ]
        )
        write_section("bench_usage_reports", section)


if __name__ == "__main__":
    main()
