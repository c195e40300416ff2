"""CPU per call of the asyncio internal clients' transport: aiohttp's pool against httpcore's.

A service that calls another for each request it serves (metering settling a usage report
with credit_service) spends the pool's CPU on every call. Here one client process sends
``--calls`` POSTs of a settlement's size, ``--concurrency`` at a time over
``--connections`` pooled connections, to a small uvicorn server in a process of its own
(a real socket on loopback), through each transport in turn, ``--repeats`` times
interleaved: the client process's CPU per call and its calls per second.

- ``httpx.AsyncHTTPTransport``: httpcore's pool (the asyncio clients' transport before);
- ``AiohttpTransport``: ``gridweave_clients.aiohttp_transport``, aiohttp's pool.

Run from the repository root: ``.venv/bin/python -m bench.bench_async_transport``
(``--no-write`` prints only).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bench.report import machine_line, write_section
from gridweave_clients.aiohttp_transport import AiohttpTransport
from tests.support.http_server import free_port
from tests.support.waiting import wait_until

#: A settlement's answer, about its size.
_ANSWER = json.dumps(
    {
        "hold_id": 7,
        "captured": 123_456,
        "released": 1,
        "status": "captured",
        "reference": "job-" + "0" * 16,
        "account": {"balance": 10**12},
    }
).encode()
_BODY = json.dumps({"reference": "job-" + "0" * 16, "user_id": "usr-bench", "amount": 5}).encode()


async def _settle(request: Request) -> Response:
    await request.body()
    return Response(_ANSWER, media_type="application/json")


#: The server: ``python -m uvicorn bench.bench_async_transport:app``.
app = Starlette(routes=[Route("/v1/settlements", _settle, methods=["POST"])])

TRANSPORTS: dict[str, Callable[[httpx.Limits], httpx.AsyncBaseTransport]] = {
    "httpx.AsyncHTTPTransport (httpcore's pool)": lambda limits: httpx.AsyncHTTPTransport(
        limits=limits
    ),
    "AiohttpTransport (aiohttp's pool)": lambda limits: AiohttpTransport(limits=limits),
}


async def _run(
    transport: httpx.AsyncBaseTransport, url: str, calls: int, concurrency: int
) -> tuple[float, float]:
    """(client CPU ms per call, calls/s) of ``calls`` POSTs, after a warm-up."""
    gate = asyncio.Semaphore(concurrency)
    headers = {"content-type": "application/json", "authorization": "Bearer bench"}

    async def one() -> None:
        async with gate:
            answer = await transport.handle_async_request(
                httpx.Request("POST", url, content=_BODY, headers=headers)
            )
            await answer.aread()
            await answer.aclose()
            assert answer.status_code == 200, answer.status_code

    await asyncio.gather(*(one() for _ in range(200)))
    cpu, clock = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one() for _ in range(calls)))
    seconds = time.perf_counter() - clock
    return (time.process_time() - cpu) * 1000 / calls, calls / seconds


async def _once(
    transport: httpx.AsyncBaseTransport, url: str, calls: int, concurrency: int
) -> tuple[float, float]:
    try:
        return await _run(transport, url, calls, concurrency)
    finally:
        await transport.aclose()


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def measure(
    calls: int, concurrency: int, connections: int, repeats: int
) -> dict[str, list[tuple[float, float]]]:
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "bench.bench_async_transport:app",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--no-access-log",
        ]
    )
    try:
        wait_until(lambda: _listening(port), timeout=30, what=f"the server on port {port}")
        url = f"http://127.0.0.1:{port}/v1/settlements"
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in TRANSPORTS}
        for _ in range(repeats):
            for name, make in TRANSPORTS.items():
                results[name].append(asyncio.run(_once(make(limits), url, calls, concurrency)))
                print(f"{name}: {results[name][-1][0]:.3f} ms/call", flush=True)
        return results
    finally:
        server.terminate()
        server.wait(timeout=30)


def report(
    results: dict[str, list[tuple[float, float]]], calls: int, concurrency: int, connections: int
) -> str:
    lines = [
        "## asyncio internal clients: the transport's CPU per call "
        "(`bench/bench_async_transport.py`)",
        "",
        f"{machine_line()}. One client process, {calls:,} POSTs of a settlement's size per "
        f"repeat, {concurrency} at a time over {connections} pooled connections, to a uvicorn "
        "server in another process on loopback; the transports alternate, "
        f"{len(next(iter(results.values())))} repeats each.",
        "",
        "| transport | client CPU ms per call (median) | calls/s (median) | each repeat, ms |",
        "| --- | ---: | ---: | --- |",
    ]
    medians = {}
    for name, runs in results.items():
        cpu = statistics.median(run[0] for run in runs)
        rate = statistics.median(run[1] for run in runs)
        medians[name] = cpu
        each = ", ".join(f"{run[0]:.2f}" for run in runs)
        lines.append(f"| {name} | {cpu:.3f} | {rate:,.0f} | {each} |")
    old, new = medians.values()
    lines += ["", f"aiohttp's pool spends **{new / old:.2f}x** the CPU of httpcore's per call."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=4_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    results = measure(args.calls, args.concurrency, args.connections, args.repeats)
    section = report(results, args.calls, args.concurrency, args.connections)
    print(section)
    if not args.no_write:
        write_section("bench_async_transport", section)


if __name__ == "__main__":
    main()
