"""The asyncio clients' transport (aiohttp's pool) against a raw TCP server: the request
sent as built, the answer as httpx reads it, and each failure told apart as the retry
policy needs (not sent, or lost)."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from gridweave_clients import AsyncInternalClient, ServiceUnavailable
from gridweave_clients._core import Failure, classify_failure
from gridweave_clients.aiohttp_transport import AiohttpTransport
from tests.support.http_server import free_port

LIMITS = httpx.Limits(max_connections=4, max_keepalive_connections=4)
BODY = {"reference": "job-1", "amount": 5}


@dataclass
class RawServer:
    """An HTTP/1.1 server written by hand: ``behaviour`` is ``answer`` (a gzip JSON body),
    ``drop`` (the connection closed once the request is read) or ``hang`` (never answers)."""

    behaviour: str
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)
    url: str = ""

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                length = _content_length(head)
                self.requests.append(head + await reader.readexactly(length))
                if self.behaviour == "drop":
                    return
                if self.behaviour == "hang":
                    await asyncio.sleep(3600)
                body = gzip.compress(json.dumps({"ok": True}).encode())
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"content-encoding: gzip\r\nx-answer: yes\r\n"
                    + f"content-length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()

    async def __aenter__(self) -> RawServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._server.close()


def _content_length(head: bytes) -> int:
    for line in head.decode("latin-1").split("\r\n"):
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            return int(value)
    return 0


def _post(url: str, **timeouts: float) -> httpx.Request:
    request = httpx.Request(
        "POST",
        f"{url}/v1/settlements?x=a%2Fb",
        json=BODY,
        headers={"authorization": "Bearer t", "x-gridweave-role": "metering"},
    )
    request.extensions["timeout"] = httpx.Timeout(5.0, **timeouts).as_dict()
    return request


def _run(behaviour: str, scenario: Callable[[RawServer, AiohttpTransport], Awaitable[Any]]) -> Any:
    async def run() -> Any:
        async with RawServer(behaviour) as server:
            transport = AiohttpTransport(limits=LIMITS)
            try:
                return await scenario(server, transport)
            finally:
                await transport.aclose()

    return asyncio.run(run())


class TestSent:
    def test_the_request_goes_as_built_and_the_answer_is_decoded_once(self) -> None:
        async def scenario(
            server: RawServer, transport: AiohttpTransport
        ) -> tuple[httpx.Response, list[bytes]]:
            answer = await transport.handle_async_request(_post(server.url))
            await answer.aread()
            return answer, server.requests

        answer, server_seen = _run("answer", scenario)

        assert answer.status_code == 200
        assert answer.json() == {"ok": True}  # gzip, decoded by httpx alone
        assert answer.headers["x-answer"] == "yes"
        (sent,) = server_seen
        head, _, body = sent.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").lower().split("\r\n")
        assert lines[0] == "post /v1/settlements?x=a%2fb http/1.1"  # the path as encoded
        names = {line.split(":")[0] for line in lines[1:]}
        assert "user-agent" not in names and "accept-encoding" not in names
        assert {"authorization", "x-gridweave-role", "content-type", "host"} <= names
        assert json.loads(body) == BODY

    def test_calls_one_after_another_share_a_kept_connection(self) -> None:
        async def scenario(server: RawServer, transport: AiohttpTransport) -> int:
            for _ in range(5):
                answer = await transport.handle_async_request(_post(server.url))
                await answer.aread()
            return server.connections

        assert _run("answer", scenario) == 1

    def test_with_no_kept_connections_each_call_has_its_own(self) -> None:
        async def scenario(server: RawServer, transport: AiohttpTransport) -> int:
            unkept = AiohttpTransport(limits=httpx.Limits(max_keepalive_connections=0))
            try:
                for _ in range(3):
                    answer = await unkept.handle_async_request(_post(server.url))
                    await answer.aread()
            finally:
                await unkept.aclose()
            return server.connections

        assert _run("answer", scenario) == 3


class TestNotSent:
    def test_a_refused_connection_is_a_connect_error(self) -> None:
        async def scenario(server: RawServer, transport: AiohttpTransport) -> None:
            await transport.handle_async_request(_post(f"http://127.0.0.1:{free_port()}"))

        with pytest.raises(httpx.ConnectError) as raised:
            _run("answer", scenario)

        assert classify_failure(raised.value) is Failure.NOT_SENT

    def test_no_pooled_connection_freed_in_time_is_a_connect_timeout(self) -> None:
        async def scenario(server: RawServer, transport: AiohttpTransport) -> int:
            hung = [
                asyncio.create_task(transport.handle_async_request(_post(server.url)))
                for _ in range(LIMITS.max_connections or 0)
            ]
            await asyncio.sleep(0.3)
            try:
                await transport.handle_async_request(_post(server.url, pool=0.2, connect=0.1))
            finally:
                for task in hung:
                    task.cancel()
            return len(server.requests)

        with pytest.raises(httpx.ConnectTimeout) as raised:
            _run("hang", scenario)

        assert classify_failure(raised.value) is Failure.NOT_SENT


class TestLost:
    def test_a_connection_dropped_after_the_request_is_a_remote_protocol_error(self) -> None:
        async def scenario(server: RawServer, transport: AiohttpTransport) -> None:
            await transport.handle_async_request(_post(server.url))

        with pytest.raises(httpx.RemoteProtocolError) as raised:
            _run("drop", scenario)

        assert classify_failure(raised.value) is Failure.LOST

    def test_an_answer_that_never_comes_is_a_read_timeout(self) -> None:
        async def scenario(server: RawServer, transport: AiohttpTransport) -> None:
            await transport.handle_async_request(_post(server.url, read=0.3))

        with pytest.raises(httpx.ReadTimeout) as raised:
            _run("hang", scenario)

        assert classify_failure(raised.value) is Failure.LOST


class TestThroughTheClient:
    """``AsyncInternalClient`` on this transport (its default) keeps the retry policy."""

    @staticmethod
    def _calls(method: str, **request: Any) -> int:
        async def scenario(server: RawServer, transport: AiohttpTransport) -> int:
            async with AsyncInternalClient(server.url, "t", role="metering") as client:
                with pytest.raises(ServiceUnavailable, match="RemoteProtocolError"):
                    await client.request(method, "/v1/things", **request)
            return len(server.requests)

        calls: int = _run("drop", scenario)
        return calls

    def test_a_write_without_a_key_is_sent_once_when_its_connection_drops(self) -> None:
        assert self._calls("POST", json=BODY) == 1

    def test_a_read_is_sent_again_when_its_connection_drops(self) -> None:
        assert self._calls("GET") == 3
