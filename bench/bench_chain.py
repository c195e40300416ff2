"""The audit chain: receipts/s into the hash chain, anchoring latency, cost on settlement.

1. Receipts/s into chain_service on the embedded PostgreSQL over real HTTP: one receipt
   per ``POST /v1/receipts`` from 8 threads (each append its own transaction and commit
   under the append lock), and 100 per ``POST /v1/receipts/batch`` (how metering's
   deliverer sends them: one commit per call) from 4 threads.
2. Anchoring latency (``CHAIN_ENABLED``, a real single-node CometBFT, ``timeout_commit``
   100 ms): for each of N batches, from ``POST /v1/batches`` (sealed) until the batch has
   its anchor stored (sent, committed, proof fetched), p50 and p99.
3. Settlement throughput with the chain off and on: ``POST /v1/usage`` (settle a job's
   hold through credit_service) from 8 threads, metering without ``CHAIN_SERVICE_URL``
   (receipts queue in the outbox, nothing delivered) and with chain_service running,
   anchoring in CometBFT, the deliverer sending every receipt meanwhile; alternated.

Run from the repository root: ``.venv/bin/python -m bench.bench_chain``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from chain_service.app import create_app as create_chain_app
from chain_service.settings import ChainSettings
from chain_service.signing import load_signing_key
from metering_service.app import create_app as create_metering_app
from tests.chain_service.factories import receipt_body, unique
from tests.metering_service.factories import metering_settings, usage_body
from tests.support.cometbft import single_node
from tests.support.credit_server import AUTH_HEADERS, INTERNAL_TOKEN, running_credit_service
from tests.support.http_server import running_service
from tests.support.postgres import start_test_postgres

THREADS = 8


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
        internal_token=INTERNAL_TOKEN,
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
            internal_token=INTERNAL_TOKEN,
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


def settlements_per_second(postgres: Any, state: Path, count: int, *, chain_on: bool) -> float:
    """Usage records settled per second, the chain off or on (delivering and anchoring)."""
    metering_url = postgres.create_database("benchmeter")
    chain_url = postgres.create_database("benchchainon")
    key = load_signing_key(state / "settle-key.pem")
    with (
        running_credit_service(postgres, state / "credit") as credit,
        single_node(state / f"node-{unique('n')}", key.public_key_hex) as node,
    ):
        chain_settings = ChainSettings(
            database_url=chain_url,
            internal_token=INTERNAL_TOKEN,
            state_dir=state,
            signing_key_file=state / "settle-key.pem",
            batch_interval_seconds=1.0,
            enabled=True,
            cometbft_rpc_url=node.rpc_url,
        )
        with running_service(create_chain_app(chain_settings), AUTH_HEADERS) as chain:
            extra = {"chain_service_url": str(chain.base_url)} if chain_on else {}
            settings = metering_settings(
                metering_url, credit.url, state_dir=state, worker_threads=THREADS, **extra
            )
            user = unique("user")
            credit.fund(user, 10**12)
            jobs = [unique("job") for _ in range(count)]
            for job in jobs:
                credit.place_hold(user, 1_000_000, reference=job)
            with running_service(create_metering_app(settings), AUTH_HEADERS) as metering:
                local = [
                    httpx.Client(base_url=str(metering.base_url), headers=AUTH_HEADERS, timeout=60)
                    for _ in range(THREADS)
                ]

                def settle(index: int) -> None:
                    answer = local[index % THREADS].post(
                        "/v1/usage", json=usage_body(jobs[index], user, gpu_model="NVIDIA L4")
                    )
                    assert answer.json()["settlement"]["state"] == "settled", answer.text

                rate = _rate(count, settle)
                for each in local:
                    each.close()
    postgres.drop_database(metering_url)
    postgres.drop_database(chain_url)
    return rate


def main() -> None:
    """Run the three measurements and print their figures."""
    with start_test_postgres() as postgres, tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        single, batched = receipts_per_second(postgres, state, 1_000)
        print(
            f"receipts/s into the chain over HTTP: {single:,.0f} one per call (8 threads), "
            f"{batched:,.0f} 100 per call (4 threads)"
        )
        latencies = anchoring_latency(postgres, state, 40)
        cuts = statistics.quantiles(latencies, n=100)
        print(
            f"anchoring latency over {len(latencies)} batches: p50 {cuts[49] * 1000:.0f} ms, "
            f"p99 {cuts[98] * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms"
        )
        rates: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(2):
            for chain_on in (False, True):
                rates[chain_on].append(
                    settlements_per_second(postgres, state, 400, chain_on=chain_on)
                )
        off, on = statistics.median(rates[False]), statistics.median(rates[True])
        print(
            f"settlements/s chain off {[round(r) for r in rates[False]]}, "
            f"on {[round(r) for r in rates[True]]}: median {off:.0f} vs {on:.0f} "
            f"({(on - off) / off * 100:+.1f}%)"
        )


if __name__ == "__main__":
    main()
