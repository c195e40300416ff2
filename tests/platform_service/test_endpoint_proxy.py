"""The endpoint proxy's relay of a streamed answer: the upstream connection is closed however
the relay ends, a client gone mid-stream included.

The upstream is a real HTTP server on a local port streaming server-sent events until its
client goes; the proxy is the platform's own, its answer driven as an ASGI server drives it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import httpx
import pytest
from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.types import Message

from gridweave_clients.credit import AsyncCreditClient
from gridweave_clients.gateway import AsyncGatewayClient
from gridweave_clients.metering.price_source import FixedPrices
from gridweave_clients.metering.pricing import DEFAULT_PRICE_TABLE
from gridweave_runtime.storage import LocalObjectStore
from platform_service.services.endpoint_proxy import EndpointProxy
from platform_service.services.endpoints import EndpointServices

USER, NAME = "alice", "chat"
EVENT = b"data: token\n\n"


class StreamingUpstream:
    """Answers every request with an endless ``text/event-stream``, an event every 10 ms,
    until the client closes the connection; counts connections opened and closed."""

    def __init__(self) -> None:
        self.opened = 0
        self.closed = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        self.opened += 1
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"transfer-encoding: chunked\r\n\r\n"
        )
        gone = asyncio.ensure_future(reader.read(1))  # b"" once the client closed
        try:
            while not gone.done():
                writer.write(b"%x\r\n%s\r\n" % (len(EVENT), EVENT))
                await writer.drain()
                await asyncio.wait([gone], timeout=0.01)
        except ConnectionError:
            pass
        finally:
            gone.cancel()
            self.closed += 1
            writer.close()

    async def connections_left(self, seconds: float = 5.0) -> int:
        """Connections still open after waiting (at most ``seconds``) for them to close."""
        deadline = time.monotonic() + seconds
        while self.closed < self.opened and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return self.opened - self.closed


@asynccontextmanager
async def proxy_to_upstream(
    store_dir: Any,
) -> AsyncIterator[tuple[EndpointProxy, StreamingUpstream]]:
    upstream = StreamingUpstream()
    server = await asyncio.start_server(upstream.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    nowhere = "http://127.0.0.1:9"  # never called: the endpoint's URL is remembered
    services = EndpointServices(
        credit=AsyncCreditClient(nowhere, "token", role="platform"),
        gateway=AsyncGatewayClient(nowhere, "token", role="platform"),
        store=LocalObjectStore(store_dir),
        prices=FixedPrices(DEFAULT_PRICE_TABLE),
        id_secret=b"secret",
        billing_seconds=60,
        wake_seconds=1.0,
    )
    proxy = EndpointProxy(services, httpx.AsyncClient(trust_env=False))
    # the running endpoint's URL as a lookup a moment ago left it
    proxy._urls[f"{USER}\x00{NAME}"] = (f"http://127.0.0.1:{port}/gw/ep", time.monotonic() + 60)
    try:
        yield proxy, upstream
    finally:
        await proxy.aclose()
        server.close()
        await server.wait_closed()


async def relayed(proxy: EndpointProxy) -> Response:
    response = await proxy.forward(
        user_id=USER,
        name=NAME,
        method="GET",
        path="v1/events",
        query="",
        headers={"accept": "text/event-stream"},
        body=b"",
    )
    assert response.status_code == 200
    return response


def scope(spec_version: str) -> dict[str, Any]:
    return {"type": "http", "asgi": {"version": "3.0", "spec_version": spec_version}}


async def never_disconnects() -> Message:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


class TestClientGoneMidStream:
    def test_a_disconnect_raised_on_send_closes_the_upstream(self, tmp_path: Any) -> None:
        """An ASGI 2.4 server: a send to a client that went raises (Starlette then raises
        ClientDisconnect and skips any background task)."""

        async def scenario() -> tuple[int, int]:
            async with proxy_to_upstream(tmp_path) as (proxy, upstream):
                response = await relayed(proxy)
                bodies = 0

                async def send(message: Message) -> None:
                    nonlocal bodies
                    if message["type"] == "http.response.body":
                        bodies += 1
                        if bodies == 3:
                            raise OSError("the client went away")

                with pytest.raises(ClientDisconnect):
                    await response(scope("2.4"), never_disconnects, send)
                # before the proxy's own client closes (which would close every connection)
                return upstream.opened, await upstream.connections_left()

        assert asyncio.run(scenario()) == (1, 0)

    def test_a_relay_cancelled_by_its_server_closes_the_upstream(self, tmp_path: Any) -> None:
        """The server cancels the request's task while a send waits on a client that reads
        no more (its connection lost, or a shutdown)."""

        async def scenario() -> tuple[int, int]:
            async with proxy_to_upstream(tmp_path) as (proxy, upstream):
                response = await relayed(proxy)
                sent = asyncio.Event()

                async def send(message: Message) -> None:
                    if message["type"] == "http.response.body":
                        sent.set()
                        await asyncio.Event().wait()  # a client that reads no more

                relay = asyncio.ensure_future(response(scope("2.4"), never_disconnects, send))
                await asyncio.wait_for(sent.wait(), 5)
                relay.cancel()
                with suppress(asyncio.CancelledError):
                    await relay
                return upstream.opened, await upstream.connections_left()

        assert asyncio.run(scenario()) == (1, 0)
