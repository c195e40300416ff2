"""An httpx transport on aiohttp's connection pool: the asyncio internal clients' default.

httpcore's pool, under many calls at once, spends more CPU than the call itself: on every
request and every answer it walks its queue and every pooled connection, polling each
idle socket to learn whether it expired. A service that calls another for each of its own
requests (metering settling a usage report with credit_service) paid about 2.4 ms of CPU
a call there, against about 0.6 ms on aiohttp's pool (``bench/bench_async_transport.py``).

The calls stay httpx's: the clients build ``httpx.Request`` objects and read
``httpx.Response`` objects, and aiohttp only carries them. Its errors come back as the
httpx errors the retry policy reads (``gridweave_clients._core.classify_failure``), so a
call aiohttp never sent is told from one whose answer was lost:

- not sent: a connection that could not be made (``ConnectError``), or none made or freed
  in the pool within the connect timeout (``ConnectTimeout``);
- lost: every other failure once a connection was had, timeouts (``ReadTimeout``), a
  dropped connection (``RemoteProtocolError``), a broken answer (``ReadError``).

Each answer is read whole before it is handed back (the internal clients read every
answer whole); bodies are left encoded for httpx to decode, and aiohttp adds no headers of
its own. aiohttp sends no call again by itself: the retry policy alone decides.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import httpx
from yarl import URL

__all__ = ["AiohttpTransport"]

# The headers aiohttp would add to every request; the call's own are sent as they are.
_NO_AUTO_HEADERS = ("Accept", "Accept-Encoding", "User-Agent", "Content-Type")


class AiohttpTransport(httpx.AsyncBaseTransport):
    """httpx requests sent over one aiohttp session, made on the loop of the first call.

    ``limits``: ``max_connections`` bounds the pool; every connection is kept alive for
    ``keepalive_expiry`` seconds (aiohttp has no smaller bound for the kept ones), none
    when ``max_keepalive_connections`` is 0.
    """

    def __init__(self, *, limits: httpx.Limits) -> None:
        self._limits = limits
        self._session: aiohttp.ClientSession | None = None

    def _opened_session(self) -> aiohttp.ClientSession:
        if self._session is None:
            limits = self._limits
            keep: dict[str, Any] = (
                {"force_close": True}  # aiohttp refuses a keep-alive expiry with it
                if limits.max_keepalive_connections == 0
                else {"keepalive_timeout": limits.keepalive_expiry or 0}
            )
            connector = aiohttp.TCPConnector(
                limit=limits.max_connections or 0, limit_per_host=0, **keep
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                auto_decompress=False,
                skip_auto_headers=_NO_AUTO_HEADERS,
                cookie_jar=aiohttp.DummyCookieJar(),
                trust_env=False,
            )
            # aiohttp sends a read, PUT or DELETE once more when its connection drops; the
            # retry policy decides that, and counts it (as aiohttp's own test client does)
            self._session._retry_connection = False
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        raw = request.headers.raw
        session = self._opened_session()
        try:
            async with session.request(
                request.method,
                URL(str(request.url), encoded=True),
                data=body or None,
                headers=[(name.decode("latin-1"), value.decode("latin-1")) for name, value in raw],
                timeout=_timeout(request),
                allow_redirects=False,
            ) as answer:
                content = await answer.read()
                return httpx.Response(
                    answer.status,
                    headers=answer.raw_headers,
                    content=content,
                    request=request,
                    extensions={"http_version": b"HTTP/1.1"},
                )
        except (TimeoutError, aiohttp.ClientError) as failed:
            raise _as_httpx(failed, request) from failed

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


def _timeout(request: httpx.Request) -> aiohttp.ClientTimeout:
    """httpx's timeouts, as aiohttp counts them: ``connect`` covers the wait for a pooled
    connection and the connect, ``sock_read`` each read of the answer."""
    timeouts = request.extensions.get("timeout", {})
    pool, connect, read = (timeouts.get(name) for name in ("pool", "connect", "read"))
    return aiohttp.ClientTimeout(
        total=None,
        connect=None if pool is None or connect is None else pool + connect,
        sock_connect=connect,
        sock_read=read,
    )


def _as_httpx(failed: BaseException, request: httpx.Request) -> httpx.TransportError:
    """The httpx error of an aiohttp failure (see the module: not sent, or lost)."""
    message = f"{type(failed).__name__}: {failed}"
    if isinstance(failed, aiohttp.ConnectionTimeoutError):
        return httpx.ConnectTimeout(message, request=request)
    if isinstance(failed, aiohttp.ClientConnectorError):
        return httpx.ConnectError(message, request=request)
    if isinstance(failed, asyncio.TimeoutError):
        return httpx.ReadTimeout(message, request=request)
    if isinstance(failed, aiohttp.ServerDisconnectedError | aiohttp.ClientResponseError):
        return httpx.RemoteProtocolError(message, request=request)
    return httpx.ReadError(message, request=request)
