"""The audit chain: receipts/s into the hash chain, anchoring latency, cost on settlement.

1. Receipts/s into chain_service on the embedded PostgreSQL over real HTTP: one receipt
   per ``POST /v1/receipts`` from 8 threads (each append its own transaction and commit
   under the append lock), and 100 per ``POST /v1/receipts/batch`` (how metering's
   deliverer sends them: one commit per call) from 4 threads.
2. Anchoring latency (``CHAIN_ENABLED``, a real single-node CometBFT, ``timeout_commit``
   100 ms): for each of N batches, from ``POST /v1/batches`` (sealed) until the batch has
   its anchor stored (sent, committed, proof fetched), p50 and p99.
3. Settlement throughput in three modes (:data:`MODES`), alternated: ``POST /v1/usage``
   (settle a job's hold through credit_service) from 8 threads, metering without
   ``CHAIN_SERVICE_URL`` (receipts queue in the outbox, nothing delivered); with
   chain_service at ``CHAIN_ENABLED=false`` (metering's receipt deliverer sends every
   receipt into the hash chain, batches sealed every ``--batch-seconds``); and at
   ``CHAIN_ENABLED=true`` (each batch also anchored in a real CometBFT). credit, metering's
   API, metering's receipt deliverer and chain_service each run as their own process, as
   deployed, the chain's at ``--niceness`` (``METERING_RECEIPT_NICENESS`` and
   ``CHAIN_NICENESS``, the settings' default unless given; 0 runs them at the settlement
   path's priority). Beside each rate, the chain's lag: from the last settlement until
   every receipt is in the hash chain, sealed in a batch, and (``CHAIN_ENABLED=true``)
   anchored; and the CPU milliseconds per settlement of each component's processes
   (PostgreSQL: the backends of the run's databases), counted until the chain caught up, so
   work a lower priority defers is counted too. ``--chain-cpus`` binds the chain's
   processes to CPUs of their own and the settlement path to the rest, in every mode.

Run from the repository root: ``.venv/bin/python -m bench.bench_chain`` (everything), or
``.venv/bin/python -m bench.bench_chain --only-settlements --pairs 4 --settlements 600``
(the settlement pairs only: about 6-8 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from chain_service.app import create_app as create_chain_app
from chain_service.settings import ChainSettings
from chain_service.signing import load_signing_key
from metering_service.settings import MeteringSettings
from tests.chain_service.factories import receipt_body, unique
from tests.metering_service.factories import running_deliverer, usage_body
from tests.support.cometbft import single_node
from tests.support.credentials import service_auth, service_auth_env
from tests.support.credit_server import AUTH_HEADERS, INTERNAL_TOKEN, CreditServer
from tests.support.http_server import running_service
from tests.support.postgres import start_test_postgres
from tests.support.service_process import service_process

THREADS = 8
#: the components of the settlement path (the rest is the chain's)
PATH = frozenset({"credit", "metering"})
#: the longest a run waits for the chain to catch up after its last settlement
LAG_LIMIT_S = 300.0
#: the chain's processes' niceness unless ``--niceness`` says otherwise (the settings' own)
DEFAULT_NICENESS = ChainSettings.model_fields["niceness"].default
assert DEFAULT_NICENESS == MeteringSettings.model_fields["receipt_niceness"].default


def _rate(count: int, action: Callable[[int], Any]) -> float:
    started = time.perf_counter()
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(action, range(count)))
    return count / (time.perf_counter() - started)


def receipts_per_second(postgres: Any, state: Path, count: int) -> tuple[float, float]:
    """(one per call from 8 threads, 100 per call from 4 threads), over HTTP."""
    url = postgres.create_database("benchchain")
    settings = ChainSettings(
        database_url=url,
        **service_auth(INTERNAL_TOKEN),
        state_dir=state,
        batch_interval_seconds=3600,
        worker_threads=THREADS,
    )
    app = create_chain_app(settings)
    bodies = [receipt_body() for _ in range(count)]
    with running_service(app, AUTH_HEADERS) as client:
        local = [
            httpx.Client(base_url=str(client.base_url), headers=AUTH_HEADERS, timeout=60)
            for _ in bodies[:THREADS]
        ]

        def send(index: int) -> None:
            answer = local[index % THREADS].post("/v1/receipts", json=bodies[index])
            assert answer.status_code == 201, answer.text

        one_per_call = _rate(count, send)
        batches = [[receipt_body() for _ in range(100)] for _ in range(count * 10 // 100)]

        def send_batch(index: int) -> None:
            answer = local[index % 4].post("/v1/receipts/batch", json={"receipts": batches[index]})
            assert answer.status_code == 200, answer.text

        started = time.perf_counter()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(send_batch, range(len(batches))))
        batched = len(batches) * 100 / (time.perf_counter() - started)
        for each in local:
            each.close()
    app.state.database.dispose()
    postgres.drop_database(url)
    return one_per_call, batched


def anchoring_latency(postgres: Any, state: Path, batches: int) -> list[float]:
    """Seconds from sealing to the stored anchor, per batch."""
    key = load_signing_key(state / "anchor-key.pem")
    url = postgres.create_database("benchanchor")
    latencies = []
    with single_node(state / "node", key.public_key_hex) as node:
        settings = ChainSettings(
            database_url=url,
            **service_auth(INTERNAL_TOKEN),
            state_dir=state,
            signing_key_file=state / "anchor-key.pem",
            batch_interval_seconds=3600,
            enabled=True,
            cometbft_rpc_url=node.rpc_url,
            anchor_poll_seconds=0.01,
        )
        with running_service(create_chain_app(settings), AUTH_HEADERS) as chain:
            for number in range(1, batches + 1):
                for _ in range(10):
                    chain.post("/v1/receipts", json=receipt_body())
                started = time.perf_counter()
                chain.post("/v1/batches")
                while chain.get(f"/v1/batches/{number}").json()["anchor"] is None:
                    time.sleep(0.005)
                latencies.append(time.perf_counter() - started)
    postgres.drop_database(url)
    return latencies


#: what the chain does beside the settlements, per mode: receipts only queued in metering's
#: outbox (no chain_service); delivered into the hash chain and Merkle batches
#: (``CHAIN_ENABLED=false``); and those batches anchored in CometBFT (``CHAIN_ENABLED=true``)
MODES = ("queued", "hash", "anchored")


class CpuMeter:
    """CPU seconds (user + system) of one run's processes, by component, from ``/proc``.

    PostgreSQL counts the backends of the run's own databases that are alive when sampled
    (the services keep pooled connections open for the whole run).
    """

    def __init__(self, processes: dict[str, list[int]], databases: list[str]) -> None:
        self.processes = processes
        self.databases = databases

    def sample(self) -> dict[str, float]:
        seconds: dict[str, float] = {name: 0.0 for name in [*self.processes, "postgres"]}
        for name, pids in self.processes.items():
            for pid in pids:
                seconds[name] += _cpu_seconds(psutil.Process(pid))
        for process in psutil.process_iter(["cmdline"]):
            command = " ".join(process.info["cmdline"] or [])
            if command.startswith("postgres:") and any(db in command for db in self.databases):
                seconds["postgres"] += _cpu_seconds(process)
        return seconds


def pin(pid: int, cpus: set[int]) -> None:
    """Bind process ``pid``, every thread it has and every process under it to ``cpus``
    (threads and processes they start later inherit it)."""
    root = psutil.Process(pid)
    for process in [root, *root.children(recursive=True)]:
        try:
            for thread in process.threads():
                os.sched_setaffinity(thread.id, cpus)
        except (psutil.Error, ProcessLookupError):  # ended since it was listed
            continue


def postmaster_pid(postgres: Any) -> int:
    """The PostgreSQL server process (the parent of a backend it starts for us)."""
    engine = create_engine(postgres.admin_url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            backend = connection.execute(text("SELECT pg_backend_pid()")).scalar_one()
    finally:
        engine.dispose()
    return psutil.Process(backend).ppid()


@dataclass(frozen=True)
class Cores:
    """Where a run's processes may run: the settlement path (credit, metering, PostgreSQL,
    the bench's client) and the chain (the deliverer, chain_service, CometBFT and the ABCI
    application); None: anywhere, as the scheduler places them."""

    path: set[int] | None = None
    chain: set[int] | None = None

    @classmethod
    def split(cls, chain: set[int]) -> Cores:
        path = os.sched_getaffinity(0) - chain
        if not chain or not path:
            raise SystemExit("--chain-cpus must leave some of this process's CPUs to the path")
        return cls(path=path, chain=chain)


def _cpu_seconds(process: psutil.Process) -> float:
    try:
        times = process.cpu_times()
    except psutil.Error:  # ended since it was listed
        return 0.0
    return times.user + times.system


@dataclass(frozen=True)
class ChainLag:
    """Seconds from a run's last settlement until all its receipts were in each stage."""

    in_chain: float | None  # None: not within LAG_LIMIT_S
    sealed: float | None
    anchored: float | None  # None also when the run does not anchor


@dataclass(frozen=True)
class SettlementRun:
    """One run: settlements per second, the chain's lag after them, and CPU milliseconds per
    settlement by component (until the chain caught up)."""

    mode: str
    rate: float
    cpu_ms: dict[str, float]
    lag: ChainLag | None  # None: receipts only queued


_LAG_QUERY = text(
    "SELECT (SELECT count(*) FROM receipts),"
    " (SELECT coalesce(sum(leaf_count), 0) FROM batches),"
    " (SELECT coalesce(sum(leaf_count), 0) FROM batches WHERE anchored_at IS NOT NULL)"
)


def chain_lag(chain_database: str, count: int, *, anchored: bool) -> ChainLag:
    """Wait until the chain holds, has sealed and (``anchored``) anchored ``count``
    receipts, from now; each stage's seconds (None: not within :data:`LAG_LIMIT_S`)."""
    started = time.perf_counter()
    stages: dict[str, float] = {}
    engine = create_engine(chain_database, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            while time.perf_counter() - started < LAG_LIMIT_S:
                row = connection.execute(_LAG_QUERY).one()
                connection.rollback()  # a fresh snapshot each look
                elapsed = time.perf_counter() - started
                for stage, done in zip(("in_chain", "sealed", "anchored"), row, strict=True):
                    if done >= count:
                        stages.setdefault(stage, elapsed)
                if len(stages) == (3 if anchored else 2):
                    break
                time.sleep(0.05)
    finally:
        engine.dispose()
    return ChainLag(stages.get("in_chain"), stages.get("sealed"), stages.get("anchored"))


def settlements_per_second(
    postgres: Any,
    state: Path,
    count: int,
    *,
    mode: str,
    batch_seconds: float = ChainSettings.model_fields["batch_interval_seconds"].default,
    niceness: int = DEFAULT_NICENESS,
    cores: Cores = Cores(),
) -> SettlementRun:
    """Usage records settled per second with the chain in ``mode`` (one of :data:`MODES`),
    chain_service sealing a batch (and anchoring it) every ``batch_seconds``, the chain's
    processes at ``niceness`` and on ``cores``; then how long the chain took to catch up.

    Each service is its own process (``python -m <package>``), as a deployment runs them:
    the chain's work competes with the settlement path for the machine's cores, not for
    one interpreter's lock (in one process, served in threads, every receipt appended
    would stop the settling requests while it holds the lock).
    """
    run = unique("run")
    databases = {name: postgres.create_database(f"bench{name}") for name in ("c", "m", "x")}
    key = load_signing_key(state / "settle-key.pem")
    shared = {**service_auth_env(INTERNAL_TOKEN), "GRIDWEAVE_STATE_DIR": str(state)}
    logs = state / run
    logs.mkdir()
    processes: dict[str, list[int]] = {}
    try:
        with ExitStack() as stack:
            credit_url, credit_process = stack.enter_context(
                service_process(
                    "credit_service",
                    {**shared, "CREDITS_DATABASE_URL": databases["c"]},
                    prefix="CREDITS_",
                    log=logs / "credit.log",
                )
            )
            processes["credit"] = [credit_process.pid]
            extra: dict[str, str] = {}
            if mode != "queued":
                chain_env = {
                    **shared,
                    "CHAIN_DATABASE_URL": databases["x"],
                    "CHAIN_SIGNING_KEY_FILE": str(state / "settle-key.pem"),
                    "CHAIN_BATCH_INTERVAL_SECONDS": str(batch_seconds),
                    "CHAIN_ENABLED": str(mode == "anchored").lower(),
                    "CHAIN_NICENESS": str(niceness),
                }
                if mode == "anchored":
                    node = stack.enter_context(
                        single_node(state / f"node-{run}", key.public_key_hex, niceness=niceness)
                    )
                    chain_env["CHAIN_COMETBFT_RPC_URL"] = node.rpc_url
                    assert node.node is not None and node.application is not None
                    processes["cometbft"] = [node.node.pid, node.application.pid]
                chain_url, chain_process = stack.enter_context(
                    service_process(
                        "chain_service", chain_env, prefix="CHAIN_", log=logs / "chain.log"
                    )
                )
                processes["chain"] = [chain_process.pid]
                extra["CHAIN_SERVICE_URL"] = chain_url
            credit = CreditServer(credit_url)
            user = unique("user")
            credit.fund(user, 10**12)
            jobs = [unique("job") for _ in range(count)]
            for job in jobs:
                credit.place_hold(user, 1_000_000, reference=job)
            metering_env = {
                **shared,
                **extra,
                "METERING_DATABASE_URL": databases["m"],
                "METERING_WORKER_THREADS": str(THREADS),
                "CREDIT_SERVICE_URL": credit_url,
            }
            metering_url, metering_process = stack.enter_context(
                service_process(
                    "metering_service", metering_env, prefix="METERING_", log=logs / "metering.log"
                )
            )
            processes["metering"] = [metering_process.pid]
            if mode != "queued":
                deliverer = stack.enter_context(
                    running_deliverer(
                        databases["m"],
                        extra["CHAIN_SERVICE_URL"],
                        log=logs / "deliverer.log",
                        niceness=niceness,
                    )
                )
                processes["deliverer"] = [deliverer.pid]
                # its start (imports, the database) is not the receipts' cost: counted, it
                # was most of the deliverer's CPU per settlement, and it took the cores from
                # the first settlements of every run with the chain
                _wait_for_line(logs / "deliverer.log", "delivering receipts to")
            local = [
                httpx.Client(base_url=metering_url, headers=AUTH_HEADERS, timeout=60)
                for _ in range(THREADS)
            ]

            def settle(index: int) -> None:
                answer = local[index % THREADS].post(
                    "/v1/usage", json=usage_body(jobs[index], user, gpu_model="NVIDIA L4")
                )
                assert answer.json()["settlement"]["state"] == "settled", answer.text

            if cores.path is not None and cores.chain is not None:
                for component, pids in processes.items():
                    for pid in pids:
                        pin(pid, cores.path if component in PATH else cores.chain)
            meter = CpuMeter(
                processes, [make_url(url).database or "" for url in databases.values()]
            )
            before = meter.sample()
            rate = _rate(count, settle)
            lag = None
            if mode != "queued":
                lag = chain_lag(databases["x"], count, anchored=mode == "anchored")
            after = meter.sample()
            for each in local:
                each.close()
    finally:
        for url in databases.values():
            postgres.drop_database(url)
    cpu_ms = {name: (after[name] - before[name]) * 1000 / count for name in after}
    return SettlementRun(mode, rate, cpu_ms, lag)


def _wait_for_line(log: Path, line: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while line not in log.read_text(errors="replace"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"no {line!r} in {log}: {log.read_text(errors='replace')}")
        time.sleep(0.05)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def _lag_text(lag: ChainLag | None) -> str:
    if lag is None:
        return ""
    return (
        f"; chain lag after the last settlement: in the chain {_seconds(lag.in_chain)}, "
        f"sealed {_seconds(lag.sealed)}, anchored {_seconds(lag.anchored)}"
    )


def _print_run(pair: int, run: SettlementRun) -> None:
    parts = ", ".join(f"{name} {ms:.2f}" for name, ms in run.cpu_ms.items())
    print(
        f"pair {pair + 1}: {run.mode} {run.rate:.1f}/s; CPU ms per settlement: {parts}"
        + _lag_text(run.lag),
        flush=True,
    )


def _summary(runs: list[SettlementRun]) -> None:
    by_mode = {mode: [run for run in runs if run.mode == mode] for mode in MODES}
    median_rate = {mode: statistics.median(r.rate for r in each) for mode, each in by_mode.items()}
    for mode, each in by_mode.items():
        names = each[0].cpu_ms
        cpu = {name: statistics.median(r.cpu_ms[name] for r in each) for name in names}
        print(
            f"{mode}: settlements/s {[round(r.rate, 1) for r in each]}, median "
            f"{median_rate[mode]:.1f}; median CPU ms per settlement "
            + ", ".join(f"{name} {ms:.2f}" for name, ms in cpu.items())
            + f" (total {sum(cpu.values()):.2f})"
        )
        lags = [r.lag for r in each if r.lag is not None]
        for stage in ("in_chain", "sealed", "anchored"):
            values = [getattr(lag, stage) for lag in lags]
            if values and all(v is not None for v in values):
                print(f"  {mode}: lag until {stage}: {', '.join(f'{v:.1f}' for v in values)} s")
    for label, base, other in (
        ("CHAIN_ENABLED true vs false", "hash", "anchored"),
        ("whole chain (anchored) vs receipts only queued", "queued", "anchored"),
        ("hash chain (false) vs receipts only queued", "queued", "hash"),
    ):
        # a pair's runs follow each other within a minute: its ratio is the least noisy figure
        ratios = [o.rate / b.rate for b, o in zip(by_mode[base], by_mode[other], strict=True)]
        change = (median_rate[other] - median_rate[base]) / median_rate[base] * 100
        print(
            f"{label}: per pair {', '.join(f'{r:.3f}' for r in ratios)}, median ratio "
            f"{statistics.median(ratios):.3f}; medians of the rates {change:+.1f}% settlements/s"
        )
    print(f"load {os.getloadavg()[0]:.1f}")


def main() -> None:
    """Run the measurements and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--settlements", type=int, default=2000, help="settled per run")
    parser.add_argument(
        "--pairs", type=int, default=3, help="rounds of every mode, order alternated"
    )
    parser.add_argument(
        "--only-settlements", action="store_true", help="skip receipts/s and anchoring"
    )
    parser.add_argument(
        "--batch-seconds",
        type=float,
        default=ChainSettings.model_fields["batch_interval_seconds"].default,
        help="CHAIN_BATCH_INTERVAL_SECONDS of the settlement runs (default: the setting's)",
    )
    parser.add_argument(
        "--niceness",
        type=int,
        default=DEFAULT_NICENESS,
        help="the chain's processes' niceness (METERING_RECEIPT_NICENESS, CHAIN_NICENESS); "
        "0: the settlement path's priority (default: the settings')",
    )
    parser.add_argument(
        "--chain-cpus",
        type=lambda value: {int(cpu) for cpu in value.split(",")},
        default=None,
        help="CPUs (e.g. 1 or 2,3) given to the chain's processes in every run, the rest of "
        "this process's to the settlement path (credit, metering, PostgreSQL, the client), "
        "as a deployment with a core for the chain would (default: none bound)",
    )
    args = parser.parse_args()
    cores = Cores() if args.chain_cpus is None else Cores.split(args.chain_cpus)
    with start_test_postgres() as postgres, tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        if cores.path is not None:
            pin(os.getpid(), cores.path)
            pin(postmaster_pid(postgres), cores.path)
            chain_cpus = sorted(cores.chain or ())
            print(f"settlement path on CPUs {sorted(cores.path)}, chain on {chain_cpus}")
        if not args.only_settlements:
            single, batched = receipts_per_second(postgres, state, 1_000)
            print(
                f"receipts/s into the chain over HTTP: {single:,.0f} one per call (8 threads), "
                f"{batched:,.0f} 100 per call (4 threads)"
            )
            latencies = anchoring_latency(postgres, state, 40)
            cuts = statistics.quantiles(latencies, n=100)
            print(
                f"anchoring latency over {len(latencies)} batches: p50 "
                f"{cuts[49] * 1000:.0f} ms, p99 {cuts[98] * 1000:.0f} ms, "
                f"max {max(latencies) * 1000:.0f} ms"
            )
        runs: list[SettlementRun] = []
        for pair in range(args.pairs):
            order = MODES if pair % 2 == 0 else tuple(reversed(MODES))
            for mode in order:
                run = settlements_per_second(
                    postgres,
                    state,
                    args.settlements,
                    mode=mode,
                    batch_seconds=args.batch_seconds,
                    niceness=args.niceness,
                    cores=cores,
                )
                runs.append(run)
                _print_run(pair, run)
        _summary(runs)


if __name__ == "__main__":
    main()
