"""Per-call CPU of the internal client base (gridweave_clients) against plain httpx.

Run from the repository root: ``.venv/bin/python -m bench.bench_clients``. Every variant
sends to the same in-process ``httpx.MockTransport`` (no socket, no server), so the figures
are the client layers' own CPU per call: building the request, the retry/decoding core,
argument checks and answer parsing. Interleaved repeats in one run; the section of
``docs/benchmarks.md`` is rewritten.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Awaitable, Callable

import httpx

from bench.report import machine_line, write_section
from gridweave_clients import AsyncInternalClient, InternalClient
from gridweave_clients.credit import CreditClient
from gridweave_clients.credit.models import AccountResponse, HoldResponse

TOKEN = "bench-token"
ACCOUNT = {"user_id": "u-1", "balance": 900, "held": 100, "available": 800}
HOLD = {
    "hold_id": 7,
    "user_id": "u-1",
    "amount": 500,
    "captured": 300,
    "released": 200,
    "status": "captured",
    "reference": "job-1",
    "account": ACCOUNT,
}
_ACCOUNT_BODY = json.dumps(ACCOUNT).encode()
_HOLD_BODY = json.dumps(HOLD).encode()


def _answer(request: httpx.Request) -> httpx.Response:
    body = _HOLD_BODY if request.method == "POST" else _ACCOUNT_BODY
    return httpx.Response(200, content=body, headers={"content-type": "application/json"})


TRANSPORT = httpx.MockTransport(_answer)


def _variants() -> dict[str, Callable[[], object]]:
    base = InternalClient("http://credit", TOKEN, role="metering", transport=TRANSPORT)
    credit = CreditClient("http://credit", TOKEN, role="metering", transport=TRANSPORT)
    plain = httpx.Client(
        base_url="http://credit",
        headers={"Authorization": f"Bearer {TOKEN}", "X-Gridweave-Role": "metering"},
        transport=TRANSPORT,
    )
    headers = {"Authorization": f"Bearer {TOKEN}", "X-Gridweave-Role": "metering"}

    def floor() -> object:
        response = TRANSPORT.handle_request(
            httpx.Request("GET", "http://credit/v1/accounts/u-1", headers=headers)
        )
        return json.loads(response.read())

    def settle_plain() -> object:
        body = {"reference": "job-1", "user_id": "u-1", "amount": 300}
        content = plain.post("/v1/settlements", json=body).content
        return HoldResponse.model_validate_json(content)

    return {
        "transport only (floor): GET, json.loads": floor,
        "InternalClient.request: GET, decoded JSON": lambda: base.request(
            "GET", "/v1/accounts/u-1"
        ),
        "CreditClient.get_account: typed GET": lambda: credit.get_account("u-1"),
        "httpx.Client + model_validate_json: typed GET": lambda: (
            AccountResponse.model_validate_json(plain.get("/v1/accounts/u-1").content)
        ),
        "CreditClient.settle: typed POST": lambda: credit.settle(
            reference="job-1", user_id="u-1", amount=300
        ),
        "httpx.Client + model_validate_json: typed POST": settle_plain,
    }


def _async_variants() -> dict[str, Callable[[], Awaitable[object]]]:
    base = AsyncInternalClient("http://credit", TOKEN, transport=TRANSPORT)
    plain = httpx.AsyncClient(
        base_url="http://credit",
        headers={"Authorization": f"Bearer {TOKEN}"},
        transport=TRANSPORT,
    )

    async def ours() -> object:
        return await base.request("GET", "/v1/accounts/u-1")

    async def theirs() -> object:
        return (await plain.get("/v1/accounts/u-1")).json()

    return {
        "AsyncInternalClient.request: GET (asyncio)": ours,
        "httpx.AsyncClient + .json(): GET (asyncio)": theirs,
    }


def _cpu_us(call: Callable[[], object], calls: int) -> float:
    start = time.process_time()
    for _ in range(calls):
        call()
    return (time.process_time() - start) / calls * 1e6


def _async_cpu_us(call: Callable[[], Awaitable[object]], calls: int) -> float:
    async def loop() -> float:
        start = time.process_time()
        for _ in range(calls):
            await call()
        return (time.process_time() - start) / calls * 1e6

    return asyncio.run(loop())


def main() -> None:
    """Time every variant, interleaved, and write the section."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    arguments = parser.parse_args()
    variants, async_variants = _variants(), _async_variants()
    samples: dict[str, list[float]] = {name: [] for name in [*variants, *async_variants]}
    for call in variants.values():  # warm up: pydantic schemas, pools
        _cpu_us(call, 200)
    for _ in range(arguments.repeats):
        for name, call in variants.items():
            samples[name].append(_cpu_us(call, arguments.calls))
        for name, call in async_variants.items():
            samples[name].append(_async_cpu_us(call, arguments.calls))
    rows = [
        f"| {name} | {statistics.median(values):.1f} | "
        f"{', '.join(f'{value:.1f}' for value in values)} |"
        for name, values in samples.items()
    ]
    section = "\n".join(
        [
            "## Internal clients: CPU per call (`bench/bench_clients.py`)",
            "",
            f"{machine_line()}. {arguments.calls:,} calls per repeat, {arguments.repeats} "
            "repeats interleaved; every variant answers from the same in-process "
            "`httpx.MockTransport`, so the figures are the client layers' own CPU. On a shared "
            "machine single repeats vary up to 2x: compare the medians of one run.",
            "",
            "| call | CPU µs per call (median) | each repeat |",
            "| --- | ---: | --- |",
            *rows,
        ]
    )
    print(section)
    if not arguments.no_write:
        write_section("bench_clients", section)


if __name__ == "__main__":
    main()
