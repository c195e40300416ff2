"""The all-in-one's services as a benchmark calls them: their URLs and the services' tokens."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

import httpx

from gridweave_allinone.secrets import service_tokens
from gridweave_runtime.service_roster import credential_of_role
from tests.support.allinone import AllInOneProcess

__all__ = ["AllInOneServices", "at_most", "broken_connections", "place_holds"]

#: Enough pooled connections for a benchmark's concurrent calls.
_LIMITS = httpx.Limits(max_connections=64, max_keepalive_connections=64)


@dataclass(frozen=True)
class AllInOneServices:
    """Some services of a running all-in-one (by name: ``credit``, ``metering``...)."""

    urls: Mapping[str, str]
    tokens: Mapping[str, str]

    @classmethod
    def of(cls, up: AllInOneProcess, *names: str) -> AllInOneServices:
        return cls({name: up.url(name) for name in names}, service_tokens(up.state_dir))

    def token(self, role: str) -> str:
        """The token of the credential whose own role ``role`` is."""
        return self.tokens[credential_of_role(role)]

    def headers(self, role: str) -> dict[str, str]:
        """An internal call's headers: as the service whose role ``role`` is."""
        return {"Authorization": f"Bearer {self.token(role)}", "X-Gridweave-Role": role}

    def client(self, service: str, role: str) -> httpx.Client:
        return httpx.Client(base_url=self.urls[service], headers=self.headers(role), timeout=60)

    def async_client(self, service: str, role: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.urls[service], headers=self.headers(role), timeout=120, limits=_LIMITS
        )


#: Connections that broke under a call (each call here is idempotent, so it is sent again:
#: a settlement by its reference, a usage report by its job, a hold by its key).
broken_connections: list[str] = []


def _where(broken: httpx.TransportError) -> str:
    try:
        request = broken.request
    except RuntimeError:
        return "?"
    return f"{request.method} {request.url.host}:{request.url.port}{request.url.path}"


async def at_most(limit: int, calls: Sequence[Callable[[], Awaitable[None]]]) -> None:
    """Run ``calls``, ``limit`` at a time; a call whose connection broke is sent again
    (twice at most), each break noted in ``broken_connections``."""
    gate = asyncio.Semaphore(limit)

    async def one(call: Callable[[], Awaitable[None]]) -> None:
        async with gate:
            for tries_left in (2, 1, 0):
                try:
                    await call()
                    return
                except httpx.TransportError as broken:
                    broken_connections.append(f"{broken!r} on {_where(broken)}")
                    if not tries_left:
                        raise

    await asyncio.gather(*(one(call) for call in calls))


async def place_holds(
    services: AllInOneServices, users: Sequence[str], count: int, *, amount: int, prefix: str
) -> list[tuple[str, str]]:
    """``count`` credit holds of ``amount`` spread over ``users``, placed as the platform
    places a job's (authorized by metering, the owner of every hold), 32 at a time, each
    with a job reference of its own (``<prefix><random>``); each hold's (user, reference)."""
    holds = [
        (users[index % len(users)], f"{prefix}{uuid.uuid4().hex[:16]}") for index in range(count)
    ]
    async with services.async_client("metering", "platform") as http:

        def place(user: str, reference: str) -> Callable[[], Awaitable[None]]:
            async def call() -> None:
                body = {"user_id": user, "amount": amount, "reference": reference}
                (await http.post("/v1/holds", json=body)).raise_for_status()

            return call

        await at_most(32, [place(user, reference) for user, reference in holds])
    return holds
