"""The HTTP client other services use to call credit_service (sync httpx, bounded retries).

Every call it makes is safe to repeat: reads, and writes carrying an idempotency key or a
settlement reference. So a timeout, a dropped connection or a 5xx is retried a bounded
number of times with jittered exponential backoff; a 4xx is never retried.

Errors::

    CreditClientError            base
    ├── CreditServiceUnavailable unreachable, timed out or 5xx after every retry
    └── CreditServiceRefused     a 4xx answer: ``status_code``, ``code``, ``details``

Responses are parsed into credit_service's own response schemas, so the client cannot drift
from the server.
"""

from __future__ import annotations

import random
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from fastapi import FastAPI, Request
from pydantic import AliasChoices, BaseModel, Field, ValidationError

from credit_service.schemas.accounts import AccountResponse
from credit_service.schemas.holds import HoldResponse
from credit_service.schemas.movements import MovementResponse
from gridweave_runtime.auth import ROLE_HEADER
from gridweave_runtime.settings import ServiceSettings

__all__ = [
    "CreditCallerSettings",
    "CreditClient",
    "CreditClientError",
    "CreditServiceRefused",
    "CreditServiceUnavailable",
    "connect_credit_service",
    "credit_client_dependency",
    "install_credit_client",
]

ResponseT = TypeVar("ResponseT", bound=BaseModel)


class CreditClientError(Exception):
    """Base of the errors the credit client raises."""


class CreditServiceUnavailable(CreditClientError):
    """credit_service could not be reached, timed out or failed (5xx) on every attempt."""


class CreditServiceRefused(CreditClientError):
    """credit_service answered 4xx: the request itself was refused (never retried)."""

    def __init__(self, status_code: int, code: str, message: str, details: dict[str, Any]):
        self.status_code = status_code
        self.code = code
        self.details = details
        super().__init__(f"credit_service refused ({status_code} {code}): {message}")


class CreditClient:
    """Calls credit_service's internal API with the internal token and a caller role."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        role: str,
        timeout_seconds: float = 5.0,
        attempts: int = 3,
        backoff_seconds: float = 0.1,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        self._attempts = attempts
        self._backoff_seconds = backoff_seconds
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {token}", ROLE_HEADER: role},
            timeout=timeout_seconds,
            transport=transport,
        )

    def close(self) -> None:
        """Close the pooled connections."""
        self._http.close()

    def get_account(self, user_id: str) -> AccountResponse:
        """The account of ``user_id``; CreditServiceRefused(404) when it has none."""
        return self._call("GET", f"/v1/accounts/{quote(user_id, safe='')}", AccountResponse)

    def mint(self, *, user_id: str, amount: int, idempotency_key: str) -> MovementResponse:
        """Create ``amount`` micro-credits on ``user_id``'s account (opened if missing)."""
        return self._call(
            "POST",
            f"/v1/accounts/{quote(user_id, safe='')}/mint",
            MovementResponse,
            json={"amount": amount, "idempotency_key": idempotency_key},
        )

    def settle(self, *, reference: str, amount: int) -> HoldResponse:
        """Capture ``amount`` of the hold placed with ``reference``: exactly once."""
        return self._call(
            "POST",
            "/v1/settlements",
            HoldResponse,
            json={"reference": reference, "amount": amount},
        )

    def _call(
        self,
        method: str,
        path: str,
        response_type: type[ResponseT],
        json: dict[str, Any] | None = None,
    ) -> ResponseT:
        last_problem = "no attempt made"
        for attempt in range(self._attempts):
            if attempt:
                delay = self._backoff_seconds * 2 ** (attempt - 1)
                time.sleep(delay * (0.5 + random.random()))
            try:
                response = self._http.request(method, path, json=json)
            except httpx.TransportError as exc:
                last_problem = f"{type(exc).__name__}: {exc}"
                continue
            if response.status_code >= 500:
                last_problem = f"HTTP {response.status_code}"
                continue
            if response.status_code >= 400:
                raise _refusal(response)
            try:
                return response_type.model_validate_json(response.content)
            except ValidationError as exc:
                raise CreditServiceUnavailable(f"unexpected answer from {path}: {exc}") from exc
        raise CreditServiceUnavailable(
            f"credit_service {method} {path} failed {self._attempts} times: {last_problem}"
        )


def _refusal(response: httpx.Response) -> CreditServiceRefused:
    try:
        error = response.json().get("error", {})
    except ValueError:
        error = {}
    if not isinstance(error, dict):
        error = {}
    details = {key: value for key, value in error.items() if key not in {"code", "message"}}
    return CreditServiceRefused(
        response.status_code,
        str(error.get("code", f"http_{response.status_code}")),
        str(error.get("message", response.text[:200])),
        details,
    )


def install_credit_client(app: FastAPI, client: CreditClient) -> None:
    """Keep ``client`` in ``app.state.credit_client`` and close it when the app shuts down."""
    app.state.credit_client = client
    inner_lifespan = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(wrapped: FastAPI) -> AsyncIterator[None]:
        async with inner_lifespan(wrapped):
            yield
        client.close()

    app.router.lifespan_context = lifespan


async def credit_client_dependency(request: Request) -> CreditClient:
    """FastAPI dependency: the app's :class:`CreditClient` (async: no worker-thread hop)."""
    client: CreditClient = request.app.state.credit_client
    return client


class CreditCallerSettings(ServiceSettings):
    """The settings of a service that calls credit_service (metering, faucet)."""

    credit_service_url: str = Field(
        default="http://127.0.0.1:8400",
        validation_alias=AliasChoices("CREDIT_SERVICE_URL"),
        description="CREDIT_SERVICE_URL: base URL of credit_service.",
    )
    credit_timeout_seconds: float = Field(
        default=5.0, gt=0, le=120, description="Timeout of one call to credit_service."
    )
    credit_attempts: int = Field(
        default=3,
        ge=1,
        le=10,
        description="Attempts per call to credit_service (retried on timeouts and 5xx only).",
    )


def connect_credit_service(
    app: FastAPI,
    settings: CreditCallerSettings,
    *,
    role: str,
    transport: httpx.BaseTransport | None = None,
) -> CreditClient:
    """Build the app's credit client from its settings and install it (closed at shutdown)."""
    if settings.internal_token is None:
        raise ValueError("GRIDWEAVE_INTERNAL_TOKEN must be set to call credit_service")
    client = CreditClient(
        settings.credit_service_url,
        settings.internal_token.get_secret_value(),
        role=role,
        timeout_seconds=settings.credit_timeout_seconds,
        attempts=settings.credit_attempts,
        transport=transport,
    )
    install_credit_client(app, client)
    return client
