"""One call through either driver, so every policy test runs on both."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from gridweave_clients import AsyncInternalClient, ErrorDecoder, InternalClient, RetryPolicy
from tests.gridweave_clients.conftest import TOKEN

DRIVERS = ("blocking", "asyncio")
#: Quick retries: the tests count attempts, never time them.
RETRY = RetryPolicy(attempts=3, backoff_seconds=0.01)


class CountingTransport(httpx.MockTransport):
    """httpx's MockTransport (both drivers), counting the requests that reached it."""

    def __init__(self, *answers: httpx.Response | Exception) -> None:
        self.requests: list[httpx.Request] = []
        self._answers = list(answers)
        super().__init__(self._answer)

    def _answer(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self._answers.pop(0) if len(self._answers) > 1 else self._answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


def request(
    driver: str,
    url: str,
    method: str,
    path: str,
    *,
    transport: httpx.MockTransport | None = None,
    token: str = TOKEN,
    timeout: float = 5.0,
    decoder: ErrorDecoder | None = None,
    close_first: bool = False,
    **options: Any,
) -> Any:
    """``client.request(method, path, **options)`` on a fresh client of ``driver``."""
    settings: dict[str, Any] = {"timeout": timeout, "retry": RETRY, "decoder": decoder}
    if driver == "blocking":
        with InternalClient(url, token, transport=transport, **settings) as client:
            if close_first:
                client.close()
            return client.request(method, path, **options)

    async def run() -> Any:
        async with AsyncInternalClient(url, token, transport=transport, **settings) as client:
            if close_first:
                await client.aclose()
            return await client.request(method, path, **options)

    return asyncio.run(run())
