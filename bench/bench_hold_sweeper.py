"""Metering's hold sweeper closing orphaned holds, on the real services over HTTP.

An orphaned hold is one whose job the gateway never created (a refused submission whose
release failed; a lost answer): :class:`~metering_service.services.hold_sweeper.HoldSweeper`
releases it once its job stayed unknown past the grace. The benchmark starts ``gridweave
up`` in a temporary directory (every service its own process; metering's own sweeper
off), places ``--holds`` holds of ``--users`` funded users whose jobs do not exist, and
times one pass of a sweeper of its own (metering's code, on credit_service and the
gateway with metering's token) with no grace, which must release every one of them. In
the same run, the same over ``--baseline-holds`` holds with one hold at a time
(``max_parallel=1``: the sweeper before its passes went parallel), for the ratio. After
each pass: no hold open, every balance whole, and credit_service's books in balance
(``GET /v1/books``).

Run from the repository root: ``.venv/bin/python -m bench.bench_hold_sweeper``
(``--no-write`` prints only).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from bench.allinone_services import AllInOneServices, place_holds
from bench.report import machine_line, write_section
from gridweave_clients.credit import AsyncCreditClient
from gridweave_clients.credit import operations as credit_ops
from gridweave_clients.gateway import AsyncGatewayClient
from metering_service.services.hold_sweeper import MAX_PARALLEL, HoldSweeper
from tests.support.allinone import AllInOneProcess

FUNDS = 10**12
HOLD = 1_000_000


@dataclass(frozen=True)
class Pass:
    """One timed sweep over ``holds`` orphaned holds."""

    holds: int
    parallel: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.holds / self.seconds


async def _sweep_orphans(
    services: AllInOneServices, users: list[str], holds: int, parallel: int
) -> Pass:
    """Place the orphans, time one pass with no grace, check the money after it."""
    await place_holds(services, users, holds, amount=HOLD, prefix="job-orphan-")
    token = services.token("metering")
    async with (
        AsyncCreditClient(services.urls["credit"], token, role="metering") as credit_client,
        AsyncGatewayClient(services.urls["gateway"], token, role="metering") as gateway_client,
    ):
        sweeper = HoldSweeper(
            credit_client, gateway_client, grace_seconds=0.0, max_parallel=parallel
        )
        clock = time.perf_counter()
        released = await sweeper.sweep()
        seconds = time.perf_counter() - clock
        assert len(released) == holds, f"{len(released)} of {holds} holds released"
        left = await credit_client.run(credit_ops.list_open_holds("job-", limit=1))
        assert left.holds == [], "a hold is still open after the pass"
    with services.client("credit", "admin") as admin:  # the books are an admin's
        books = admin.get("/v1/books").raise_for_status().json()
        assert books["out_of_balance"] == [] and books["open_held"] == 0, books
        for user in users:
            account = admin.get(f"/v1/accounts/{user}").raise_for_status().json()
            assert (account["balance"], account["held"]) == (FUNDS, 0), account
    return Pass(holds, parallel, seconds)


def measure(holds: int, baseline_holds: int, users: int) -> tuple[Pass, Pass]:
    """The baseline pass (one hold at a time), then the sweeper's own."""
    workdir = Path(tempfile.mkdtemp(prefix="gw-bench-sweeper-"))
    workdir.chmod(0o755)
    try:
        # metering's own sweeper off: this benchmark's passes are the only ones
        with AllInOneProcess(workdir, environment={"METERING_HOLD_SWEEP_SECONDS": "0"}) as up:
            services = AllInOneServices.of(up, "credit", "metering", "gateway")
            names = [f"usr-sweep-{uuid.uuid4().hex[:8]}-{index:04d}" for index in range(users)]
            with services.client("credit", "admin") as admin:
                for name in names:
                    body = {"amount": FUNDS, "idempotency_key": f"bench-fund:{name}"}
                    admin.post(f"/v1/accounts/{name}/mint", json=body).raise_for_status()
            baseline = asyncio.run(_sweep_orphans(services, names, baseline_holds, 1))
            ours = asyncio.run(_sweep_orphans(services, names, holds, MAX_PARALLEL))
            return baseline, ours
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def report(baseline: Pass, ours: Pass, users: int) -> str:
    return "\n".join(
        [
            "## The job hold sweeper: orphaned holds closed (`bench/bench_hold_sweeper.py`)",
            "",
            f"{machine_line()}. `gridweave up` in a temporary directory (every service its own "
            f"process); the holds of {users} users whose jobs were never created, released "
            "by one pass of metering's hold sweeper with no grace (a gateway read and a "
            "release each, over HTTP).",
            "",
            "| pass | holds | time | holds/s |",
            "| --- | --- | --- | --- |",
            f"| one hold at a time (the baseline) | {baseline.holds:,} | "
            f"{baseline.seconds:.1f} s | {baseline.rate:.0f} |",
            f"| {ours.parallel} at a time (the sweeper's default) | {ours.holds:,} | "
            f"{ours.seconds:.1f} s | {ours.rate:.0f} |",
            f"| ratio (holds/s) | | | {ours.rate / baseline.rate:.2f}x |",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--holds", type=int, default=10_000)
    parser.add_argument("--baseline-holds", type=int, default=2_000)
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    baseline, ours = measure(args.holds, args.baseline_holds, args.users)
    section = report(baseline, ours, args.users)
    print(section)
    if not args.no_write:
        write_section("bench_hold_sweeper", section)


if __name__ == "__main__":
    main()
