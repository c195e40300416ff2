"""Settlements per second: credit_service over real HTTP on the embedded PostgreSQL.

A settlement is ``POST /v1/settlements`` (capture the hold placed for a job, release the
rest). The benchmark starts a fresh embedded PostgreSQL, serves credit_service with uvicorn
on a loopback port (``--workers`` processes), places holds for N jobs, then settles them from
32 concurrent keep-alive connections, then replays every settlement (each must come back
unchanged), and finally checks for drift: every balance equals its ledger sum, no hold is
left open and the total balance equals what was minted less what was settled.

The settlements are sent by ``wrk`` (``bench/settlements.lua``: each settlement once, every
answer written down), so the load generator takes little of the CPU the server and
PostgreSQL share; every settlement must be answered 200 exactly once with the amount asked.
Without wrk the benchmark says how to install it; ``--load python`` uses the asyncio client
instead. The CPU the server, PostgreSQL and the load generator used during the settlements
is read from ``/proc`` and printed per settlement.

Run from the repository root: ``.venv/bin/python -m bench.bench_settlements``
(``--record`` writes the figures to ``docs/benchmarks.md``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import psycopg

from bench.process_cpu import tree_cpu_seconds
from bench.report import machine_line, write_section
from bench.settlement_wrk import INSTALL_HINT, find_wrk, settle_with_wrk
from gridweave_runtime.postgres import (
    embedded_server_url,
    ensure_database,
    stop_embedded_server,
    to_sqlalchemy_url,
)
from tests.support.credentials import service_auth_env
from tests.support.http_server import free_port

TOKEN = "bench-internal-token"
REPO_ROOT = Path(__file__).resolve().parents[1]
GOAL_PER_SECOND = 1_000


class HttpConnection:
    """A minimal keep-alive HTTP/1.1 client, so the client's CPU stays small beside the server's."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: dict[str, Any], headers: str = "") -> tuple[int, Any]:
        """POST a JSON body; return (status, decoded JSON)."""
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        payload = json.dumps(body).encode()
        self.writer.write(
            (
                f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\n"
                f"Authorization: Bearer {TOKEN}\r\n{headers}"
                f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
            ).encode()
            + payload
        )
        await self.writer.drain()
        status_line = await self.reader.readline()
        status = int(status_line.split()[1])
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return status, json.loads(await self.reader.readexactly(length))

    async def close(self) -> None:
        """Close the connection."""
        if self.writer is not None:
            self.writer.close()
            await self.writer.wait_closed()


def start_server(database_url: str, port: int, workers: int) -> subprocess.Popen[bytes]:
    """Serve credit_service with uvicorn; return once /healthz answers."""
    env = {
        **os.environ,
        "CREDITS_DATABASE_URL": database_url,
        **service_auth_env(TOKEN),
        "CREDITS_DATABASE_POOL_SIZE": "40",
    }
    command = [sys.executable, "-m", "uvicorn", "credit_service.app:create_app", "--factory"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)]
    command += ["--log-level", "warning", "--no-access-log"]
    process = subprocess.Popen(command, env=env, cwd=REPO_ROOT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                if b"200" in sock.recv(100):
                    return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("credit_service did not start")


async def run_clients(
    port: int, clients: int, jobs: list[Any], call: Callable[[HttpConnection, Any], Awaitable[None]]
) -> float:
    """Run ``call`` for every job from ``clients`` concurrent connections; return seconds taken."""
    queue: asyncio.Queue[Any] = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)
    connections = [HttpConnection("127.0.0.1", port) for _ in range(clients)]

    async def worker(connection: HttpConnection) -> None:
        while not queue.empty():
            await call(connection, queue.get_nowait())

    started = time.perf_counter()
    await asyncio.gather(*(worker(connection) for connection in connections))
    elapsed = time.perf_counter() - started
    for connection in connections:
        await connection.close()
    return elapsed


def _own_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def benchmark(
    port: int,
    jobs: int,
    users: int,
    clients: int,
    *,
    wrk: str | None,
    probes: dict[str, Callable[[], float]],
) -> dict[str, Any]:
    """Mint, place holds, settle, replay; return the figures and what the ledger should hold.

    ``wrk`` (its path) sends the settlements when given, else the Python client does;
    ``probes`` read the CPU seconds of the server and of PostgreSQL around the settlements.
    """
    rng = random.Random(1)
    user_ids = [f"bench-user-{index}" for index in range(users)]
    minted_each = 10**12
    admin = "X-Gridweave-Role: admin\r\n"

    async def mint(connection: HttpConnection, user_id: str) -> None:
        body = {"amount": minted_each, "idempotency_key": f"mint-{user_id}"}
        status, _ = await connection.post(f"/v1/accounts/{user_id}/mint", body, admin)
        assert status == 200

    await run_clients(port, clients, user_ids, mint)
    holds = [
        (f"job-{index}", user_ids[index % users], rng.randint(1_000, 9_000_000))
        for index in range(jobs)
    ]

    async def place(connection: HttpConnection, hold: tuple[str, str, int]) -> None:
        reference, user_id, amount = hold
        body = {
            "user_id": user_id,
            "amount": amount,
            "idempotency_key": f"hold-{reference}",
            "reference": reference,
        }
        status, answer = await connection.post("/v1/holds", body)
        assert status == 200, answer

    place_seconds = await run_clients(port, clients, holds, place)
    settlements = [
        (reference, user_id, rng.randint(0, amount)) for reference, user_id, amount in holds
    ]
    answers: dict[str, Any] = {}

    async def settle(connection: HttpConnection, settlement: tuple[str, str, int]) -> None:
        reference, user_id, amount = settlement
        status, answer = await connection.post(
            "/v1/settlements", {"reference": reference, "user_id": user_id, "amount": amount}
        )
        assert status == 200, answer
        assert reference not in answers, f"{reference} answered twice"
        answers[reference] = answer

    cpu_before = {name: probe() for name, probe in probes.items()}
    client_cpu = _own_cpu_seconds()
    if wrk is None:
        settle_seconds = await run_clients(port, clients, settlements, settle)
        client_cpu = _own_cpu_seconds() - client_cpu
    else:
        run = settle_with_wrk(wrk, port=port, clients=clients, token=TOKEN, settlements=settlements)
        settle_seconds, client_cpu = run.seconds, run.cpu_seconds
        for status, body in run.answers:
            answer = json.loads(body)
            assert status == 200, (status, answer)
            assert answer["reference"] not in answers, f"{answer['reference']} answered twice"
            answers[answer["reference"]] = answer
    cpu = {name: probe() - cpu_before[name] for name, probe in probes.items()}
    cpu["load generator"] = client_cpu
    # every settlement answered 200 exactly once, with the amount it asked for
    assert {reference: answer["captured"] for reference, answer in answers.items()} == {
        reference: amount for reference, _, amount in settlements
    }, "a settlement is missing or answered with another amount"

    async def replay(connection: HttpConnection, settlement: tuple[str, str, int]) -> None:
        reference, user_id, amount = settlement
        status, answer = await connection.post(
            "/v1/settlements", {"reference": reference, "user_id": user_id, "amount": amount}
        )
        assert status == 200 and answer == answers[reference], (reference, answer)

    replay_seconds = await run_clients(port, clients, settlements, replay)
    return {
        "holds_per_second": jobs / place_seconds,
        "settlements_per_second": jobs / settle_seconds,
        "replays_per_second": jobs / replay_seconds,
        "cpu_ms_per_settlement": {name: 1000 * value / jobs for name, value in cpu.items()},
        "expected_total": minted_each * users - sum(amount for _, _, amount in settlements),
        "expected_entries": users + sum(1 for _, _, amount in settlements if amount > 0),
    }


def check_drift(libpq_url: str, expected_total: int, expected_entries: int) -> dict[str, int]:
    """Compare the ledger with the balances and with the expected totals."""
    with psycopg.connect(libpq_url) as conn:
        mismatched = conn.execute(
            "SELECT COUNT(*) FROM accounts a WHERE a.balance <>"
            " (SELECT COALESCE(SUM(amount), 0) FROM ledger_entries e WHERE e.account_id = a.id)"
            " OR a.held <> (SELECT COALESCE(SUM(amount), 0) FROM holds h"
            "   WHERE h.account_id = a.id AND h.status = 'open')"
        ).fetchone()
        total = conn.execute("SELECT COALESCE(SUM(balance), 0) FROM accounts").fetchone()
        entries = conn.execute("SELECT COUNT(*) FROM ledger_entries").fetchone()
        open_holds = conn.execute("SELECT COUNT(*) FROM holds WHERE status = 'open'").fetchone()
    assert mismatched and total and entries and open_holds
    return {
        "accounts_drifting": int(mismatched[0]),
        "total_drift": int(total[0]) - expected_total,
        "entry_drift": int(entries[0]) - expected_entries,
        "holds_left_open": int(open_holds[0]),
    }


NOTES = """
Notes:

- A settlement is one HTTP call, one transaction and one database call: the PL/pgSQL
  function `settle_hold` claims the key `settlement <sha256 of the job id>`, locks the
  hold, posts through `ledger_apply_posting`, closes the hold and stores the answer; then
  COMMIT (fsync on). The route is async, on psycopg async connections, and sends the
  stored JSON as is.
- The load is sent by wrk (C); the CPU line shows where each settlement's time goes.
"""


def record(lines: list[str]) -> None:
    """Write this benchmark's section of docs/benchmarks.md, leaving other sections alone."""
    section = (
        "## credit_service settlements\n\n"
        f"{machine_line()}. `.venv/bin/python -m bench.bench_settlements` (server, wrk and "
        "PostgreSQL share the cores).\n\n" + "\n".join(lines) + "\n" + NOTES.rstrip("\n")
    )
    write_section("bench_settlements", section)


def main() -> None:
    """Run the benchmark and print (optionally record) its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2, help="uvicorn worker processes")
    parser.add_argument(
        "--load",
        choices=["wrk", "python"],
        default="wrk",
        help="what sends the settlements: wrk (default; must be installed) or the Python client",
    )
    parser.add_argument("--record", action="store_true", help="append to docs/benchmarks.md")
    args = parser.parse_args()
    wrk = find_wrk() if args.load == "wrk" else None
    if args.load == "wrk" and wrk is None:
        raise SystemExit(INSTALL_HINT)

    state_dir = Path(tempfile.mkdtemp(prefix="gridweave-bench-"))
    server: subprocess.Popen[bytes] | None = None
    try:
        libpq_url = embedded_server_url(state_dir, delete_on_exit=True)
        database_url = to_sqlalchemy_url(libpq_url, "credits")
        ensure_database(database_url)
        port = free_port()
        server = start_server(database_url, port, args.workers)
        postmaster = int((state_dir / "postgres" / "postmaster.pid").read_text().split()[0])
        probes: dict[str, Callable[[], float]] = {
            "server": partial(tree_cpu_seconds, server.pid),
            "postgresql": partial(tree_cpu_seconds, postmaster),
        }
        figures = asyncio.run(
            benchmark(port, args.jobs, args.users, args.clients, wrk=wrk, probes=probes)
        )
        drift = check_drift(
            libpq_url.replace("/postgres?", "/credits?"),
            figures["expected_total"],
            figures["expected_entries"],
        )
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        stop_embedded_server(state_dir)
        shutil.rmtree(state_dir, ignore_errors=True)

    zero_drift = all(value == 0 for value in drift.values())
    drift_figures = ", ".join(f"{name}={value}" for name, value in drift.items())
    verdict = "met" if figures["settlements_per_second"] >= GOAL_PER_SECOND else "MISSED"
    cpu = figures["cpu_ms_per_settlement"]
    generator = "wrk -t1 (C)" if wrk is not None else "the Python asyncio client"
    lines = [
        f"- settlements: {figures['settlements_per_second']:,.0f}/s "
        f"(goal >= {GOAL_PER_SECOND:,}/s: {verdict}), sent by {generator}",
        "- CPU per settlement: "
        + ", ".join(f"{name} {value:.2f} ms" for name, value in cpu.items())
        + f" (total {sum(cpu.values()):.2f} ms)",
        f"- holds placed: {figures['holds_per_second']:,.0f}/s",
        f"- settlement replays (same job id again, answer unchanged): "
        f"{figures['replays_per_second']:,.0f}/s",
        f"- drift: {'zero' if zero_drift else 'FOUND'} ({drift_figures})",
        f"- setup: {args.jobs:,} jobs over {args.users} accounts, {args.clients} concurrent "
        f"keep-alive clients, uvicorn --workers {args.workers}, embedded PostgreSQL "
        f"(fsync and synchronous_commit on), Python {platform.python_version()}",
    ]
    print("\n".join(lines))
    if args.record:
        record(lines)
    if not zero_drift:
        raise SystemExit("drift found")


if __name__ == "__main__":
    main()
