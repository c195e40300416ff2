"""Settlements per second of the billing path end to end, beside credit_service alone.

In one run, on ``gridweave up`` (every service its own process, on real ports, with its
own PostgreSQL database):

- **credit_service alone**: ``POST /v1/settlements`` of N holds (capture a fixed amount,
  release the rest), ``--concurrency`` at a time;
- **end to end, usage to ledger**: ``POST /v1/usage`` to metering_service of N finished
  jobs, ``--concurrency`` at a time, as the gateway reports a job's usage: metering prices
  the run, writes its usage row and its receipt to the outbox, and settles the job's hold
  with credit_service over HTTP.

Both place their holds first (not timed). The two alternate, ``--rounds`` times each, so
the machine's noise falls on both; the ratio is of the rates summed over the rounds. After
each round: every hold settled once with what was asked (end to end: the usage record's
cost), none left open, every balance what was minted less what was settled, and
credit_service's books in balance (``GET /v1/books``).

Run from the repository root: ``.venv/bin/python -m bench.bench_billing_owner``
(``--no-write`` prints only).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from bench.allinone_services import AllInOneServices, at_most, broken_connections, place_holds
from bench.process_cpu import cpu_seconds_by_command
from bench.report import machine_line, write_section
from tests.support.allinone import AllInOneProcess

FUNDS = 10**13
HOLD = 10**9
#: What credit_service alone captures of each hold.
CAPTURE = 123_456


@dataclass(frozen=True)
class Round:
    """One timed batch of settlements: ``path`` is ``credit`` or ``usage``."""

    path: str
    settlements: int
    seconds: float
    captured: int
    #: CPU milliseconds per settlement, by process (``PROCESSES``), over the timed part.
    cpu_ms: dict[str, float]

    @property
    def rate(self) -> float:
        return self.settlements / self.seconds


async def _funded_user(services: AllInOneServices) -> str:
    user = f"usr-billing-{uuid.uuid4().hex[:10]}"
    async with services.async_client("credit", "admin") as admin:
        body = {"amount": FUNDS, "idempotency_key": f"bench-fund:{user}"}
        (await admin.post(f"/v1/accounts/{user}/mint", json=body)).raise_for_status()
    return user


async def _settle_directly(
    services: AllInOneServices, user: str, references: list[str], concurrency: int
) -> int:
    """credit_service alone: each hold captured with ``CAPTURE``; what was captured."""
    captured: list[int] = []
    async with services.async_client("credit", "metering") as http:

        def settle(reference: str) -> Callable[[], Awaitable[None]]:
            async def call() -> None:
                body = {"reference": reference, "user_id": user, "amount": CAPTURE}
                answer = await http.post("/v1/settlements", json=body)
                answer.raise_for_status()
                captured.append(answer.json()["captured"])

            return call

        await at_most(concurrency, [settle(reference) for reference in references])
    return sum(captured)


async def _report_usage(
    services: AllInOneServices, user: str, references: list[str], concurrency: int
) -> int:
    """End to end: each job's usage reported to metering as the gateway reports it; the
    sum of the records' costs."""
    costs: list[int] = []
    async with services.async_client("metering", "gateway") as http:

        def report(serial: int, reference: str) -> Callable[[], Awaitable[None]]:
            async def call() -> None:
                body = {
                    "job_id": reference,
                    "user_id": user,
                    "node": "node-bench",
                    "gpu_indices": [serial % 8],
                    "vram_mb": 8192,
                    "vendor": "nvidia",
                    "gpu_count": 1,
                    "wall_seconds": 12.5,
                }
                answer = await http.post("/v1/usage", json=body)
                answer.raise_for_status()
                record = answer.json()
                settled = record["settlement"]
                assert settled["state"] == "settled" and settled["charged"] == record["cost"], (
                    record
                )
                costs.append(record["cost"])

            return call

        calls = [report(serial, reference) for serial, reference in enumerate(references)]
        await at_most(concurrency, calls)
    return sum(costs)


async def _round(
    services: AllInOneServices, path: str, settlements: int, concurrency: int
) -> Round:
    """Place the holds, time their settlement by ``path``, check the money after it."""
    user = await _funded_user(services)
    holds = await place_holds(services, [user], settlements, amount=HOLD, prefix="job-billing-")
    references = [reference for _, reference in holds]
    settle = _settle_directly if path == "credit" else _report_usage
    cpu = cpu_seconds_by_command(PROCESSES)
    clock = time.perf_counter()
    captured = await settle(services, user, references, concurrency)
    seconds = time.perf_counter() - clock
    used = cpu_seconds_by_command(PROCESSES)
    cpu_ms = {name: (used[name] - cpu.get(name, 0.0)) * 1000 / settlements for name in used}
    await _check_books(services, user, captured)
    return Round(path, settlements, seconds, captured, cpu_ms)


#: The processes whose CPU is counted, by a word of their command line (first match).
PROCESSES = (
    ("credit_service", "credit"),
    ("metering_service.deliverer", "metering's deliverer"),
    ("metering_service", "metering"),
    ("chain_service", "chain"),
    ("postgres", "PostgreSQL"),
    ("bench_billing_owner", "the load (this process)"),
)


async def _check_books(services: AllInOneServices, user: str, captured: int) -> None:
    async with services.async_client("credit", "admin") as admin:
        account = (await admin.get(f"/v1/accounts/{user}")).raise_for_status().json()
        assert (account["balance"], account["held"]) == (FUNDS - captured, 0), account
        books = (await admin.get("/v1/books")).raise_for_status().json()
        assert books["out_of_balance"] == [], books


def measure(settlements: int, concurrency: int, rounds: int) -> list[Round]:
    workdir = Path(tempfile.mkdtemp(prefix="gw-bench-billing-"))
    workdir.chmod(0o755)
    try:
        with AllInOneProcess(workdir) as up:
            services = AllInOneServices.of(up, "credit", "metering")
            asyncio.run(_round(services, "usage", min(200, settlements), concurrency))  # warm up
            measured = []
            for _ in range(rounds):
                for path in ("credit", "usage"):
                    measured.append(asyncio.run(_round(services, path, settlements, concurrency)))
                    print(f"{path}: {measured[-1].rate:,.0f} settlements/s", flush=True)
            return measured
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _rate(rounds: list[Round], path: str) -> float:
    chosen = [r for r in rounds if r.path == path]
    return sum(r.settlements for r in chosen) / sum(r.seconds for r in chosen)


def report(rounds: list[Round], concurrency: int) -> str:
    credit, usage = _rate(rounds, "credit"), _rate(rounds, "usage")
    lines = [
        "## Billing end to end: job usage to the ledger, beside credit_service alone "
        "(`bench/bench_billing_owner.py`)",
        "",
        f"{machine_line()}. `gridweave up` in a temporary directory (every service its own "
        f"process); {concurrency} requests at a time; the two paths alternate, each round "
        "on holds placed for it (not timed), and every round's money is checked after it.",
        "",
        "| round | path | settlements | time | settlements/s |",
        "| --- | --- | --- | --- | --- |",
    ]
    for index, measured in enumerate(rounds, start=1):
        name = (
            "credit_service alone (`POST /v1/settlements`)"
            if measured.path == "credit"
            else "end to end (`POST /v1/usage` to metering)"
        )
        lines.append(
            f"| {index} | {name} | {measured.settlements:,} | {measured.seconds:.1f} s "
            f"| {measured.rate:,.0f} |"
        )
    lines.append(
        f"| all | end to end / credit_service alone | | | {usage:,.0f} / {credit:,.0f} = "
        f"**{usage / credit:.2f}x** (goal >= 0.8x) |"
    )
    names = [label for _, label in PROCESSES] + ["other"]
    lines += [
        "",
        "CPU milliseconds per settlement, by process (the mean over each path's rounds):",
        "",
        "| path | " + " | ".join(names) + " | all |",
        "| --- |" + " --- |" * (len(names) + 1),
    ]
    for path in ("credit", "usage"):
        chosen = [r for r in rounds if r.path == path]
        means = [sum(r.cpu_ms.get(name, 0.0) for r in chosen) / len(chosen) for name in names]
        cells = " | ".join(f"{mean:.2f}" for mean in means)
        lines.append(f"| {path} | {cells} | {sum(means):.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settlements", type=int, default=2_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    rounds = measure(args.settlements, args.concurrency, args.rounds)
    section = report(rounds, args.concurrency)
    if broken_connections:
        section += (
            f"\n\n{len(broken_connections)} call(s) sent again after a broken connection: "
            + ", ".join(sorted(set(broken_connections)))
        )
    print(section)
    if not args.no_write:
        write_section("bench_billing_owner", section)


if __name__ == "__main__":
    main()
