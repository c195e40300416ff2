"""Placing a job's hold: authorized through metering (the platform's path) beside placed at
credit_service directly (the platform's path before metering owned every hold), one run.

On ``gridweave up`` (every service its own process, on real ports): ``--holds`` holds per
round, each with a job reference of its own, one call at a time (the latency a submission
waits) and then ``--concurrency`` at a time (the rate). The two paths alternate,
``--rounds`` times each, so the machine's noise falls on both. After each round every hold
it placed is released (not timed) and the account is checked: nothing held, nothing moved,
credit_service's books in balance.

Run from the repository root: ``.venv/bin/python -m bench.bench_authorize``
(``--no-write`` prints only).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from bench.allinone_services import AllInOneServices
from bench.report import machine_line, write_section
from tests.support.allinone import AllInOneProcess

FUNDS = 10**13
HOLD = 1_000
#: metering authorizes for the platform; credit_service places for metering alone
PATHS = ("metering", "credit")


@dataclass(frozen=True)
class Round:
    """One path's round: each sequential call's seconds, and the concurrent batch's."""

    path: str
    latencies: list[float]
    holds: int
    seconds: float


def _placement(path: str, user: str, reference: str) -> dict[str, object]:
    body: dict[str, object] = {"user_id": user, "amount": HOLD, "reference": reference}
    if path == "credit":
        body["idempotency_key"] = reference  # as metering places it
    return body


async def _round(
    services: AllInOneServices, path: str, user: str, holds: int, parallel: int
) -> Round:
    """Time ``holds`` placements one at a time, then ``holds`` ``parallel`` at a time."""
    service, role = ("metering", "platform") if path == "metering" else ("credit", "metering")
    references: list[str] = []
    latencies: list[float] = []
    async with services.async_client(service, role) as http:

        async def place() -> None:
            reference = f"job-authz-{uuid.uuid4().hex[:16]}"
            references.append(reference)
            answer = await http.post("/v1/holds", json=_placement(path, user, reference))
            answer.raise_for_status()

        for _ in range(holds):
            clock = time.perf_counter()
            await place()
            latencies.append(time.perf_counter() - clock)
        gate = asyncio.Semaphore(parallel)

        async def gated() -> None:
            async with gate:
                await place()

        clock = time.perf_counter()
        await asyncio.gather(*(gated() for _ in range(holds)))
        seconds = time.perf_counter() - clock
    await _release_all(services, user, references)
    return Round(path, latencies, holds, seconds)


async def _release_all(services: AllInOneServices, user: str, references: list[str]) -> None:
    """Every hold of the round settled for 0, then the account whole and the books even."""
    gate = asyncio.Semaphore(32)
    async with services.async_client("credit", "metering") as http:

        async def release(reference: str) -> None:
            async with gate:
                body = {"reference": reference, "user_id": user, "amount": 0}
                (await http.post("/v1/settlements", json=body)).raise_for_status()

        await asyncio.gather(*(release(reference) for reference in references))
    async with services.async_client("credit", "admin") as admin:
        account = (await admin.get(f"/v1/accounts/{user}")).raise_for_status().json()
        assert (account["balance"], account["held"]) == (FUNDS, 0), account
        books = (await admin.get("/v1/books")).raise_for_status().json()
        assert books["out_of_balance"] == [], books


async def _funded_user(services: AllInOneServices) -> str:
    user = f"usr-authz-{uuid.uuid4().hex[:10]}"
    async with services.async_client("credit", "admin") as admin:
        body = {"amount": FUNDS, "idempotency_key": f"bench-fund:{user}"}
        (await admin.post(f"/v1/accounts/{user}/mint", json=body)).raise_for_status()
    return user


def measure(holds: int, parallel: int, rounds: int) -> list[Round]:
    workdir = Path(tempfile.mkdtemp(prefix="gw-bench-authorize-"))
    workdir.chmod(0o755)
    try:
        # metering's own sweeper off: the open holds are this benchmark's
        with AllInOneProcess(workdir, environment={"METERING_HOLD_SWEEP_SECONDS": "0"}) as up:
            services = AllInOneServices.of(up, "credit", "metering")
            user = asyncio.run(_funded_user(services))
            for path in PATHS:  # warm up
                asyncio.run(_round(services, path, user, min(100, holds), parallel))
            measured = []
            for _ in range(rounds):
                for path in PATHS:
                    measured.append(asyncio.run(_round(services, path, user, holds, parallel)))
                    last = measured[-1]
                    print(
                        f"{path}: p50 {statistics.median(last.latencies) * 1000:.2f} ms, "
                        f"{last.holds / last.seconds:,.0f} holds/s",
                        flush=True,
                    )
            return measured
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _figures(rounds: list[Round], path: str) -> tuple[float, float, float]:
    """p50 and p99 ms of the sequential calls, and holds/s of the concurrent ones."""
    chosen = [r for r in rounds if r.path == path]
    latencies = sorted(latency for r in chosen for latency in r.latencies)
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    rate = sum(r.holds for r in chosen) / sum(r.seconds for r in chosen)
    return statistics.median(latencies) * 1000, p99 * 1000, rate


def report(rounds: list[Round], holds: int, parallel: int) -> str:
    metering, credit = _figures(rounds, "metering"), _figures(rounds, "credit")
    per_path = len(rounds) // len(PATHS)
    return "\n".join(
        [
            "## Placing a hold: authorized through metering, beside credit_service directly "
            "(`bench/bench_authorize.py`)",
            "",
            f"{machine_line()}. `gridweave up` in a temporary directory (every service its "
            f"own process); {per_path} rounds per path, alternating, of {holds:,} placements "
            f"one at a time and {holds:,} {parallel} at a time, each with a reference of its "
            "own; every hold released and the books checked after each round.",
            "",
            "| path | p50 ms (one at a time) | p99 ms | holds/s (concurrent) |",
            "| --- | --- | --- | --- |",
            f"| metering `POST /v1/holds` (the platform's path) | {metering[0]:.2f} | "
            f"{metering[1]:.2f} | {metering[2]:,.0f} |",
            f"| credit_service `POST /v1/holds` directly | {credit[0]:.2f} | {credit[1]:.2f} "
            f"| {credit[2]:,.0f} |",
            f"| metering / credit_service | {metering[0] / credit[0]:.2f}x | "
            f"{metering[1] / credit[1]:.2f}x | {metering[2] / credit[2]:.2f}x |",
            "",
            "The difference is the hop through metering (its HTTP server, the request "
            "validated, the call to credit_service, the answer passed back): what one "
            "owner of every hold costs a submission, once per job or map worker.",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--holds", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    rounds = measure(args.holds, args.concurrency, args.rounds)
    section = report(rounds, args.holds, args.concurrency)
    print(section)
    if not args.no_write:
        write_section("bench_authorize", section)


if __name__ == "__main__":
    main()
