"""Clients of Gridweave's internal services over one internal HTTP client base.

Importable without the server extras (httpx and pydantic only): services and the SDK use
it, and it never imports a server. ``gridweave_clients.credit``, ``.metering`` and
``.faucet`` hold each service's client and wire models; :mod:`gridweave_clients.base` the
base a client for another service is built on.
"""

from __future__ import annotations

from gridweave_clients._core import Answer, Call, ErrorDecoder, Operation, RetryPolicy
from gridweave_clients.base import (
    ROLE_HEADER,
    USER_HEADER,
    AsyncInternalClient,
    InternalClient,
    awaiting,
    blocking,
)
from gridweave_clients.errors import (
    ClientClosed,
    Conflict,
    Forbidden,
    Gone,
    InvalidRequest,
    NotFound,
    PaymentRequired,
    RateLimited,
    ServiceError,
    ServiceRefused,
    ServiceUnavailable,
    Unauthorized,
)

__all__ = [
    "ROLE_HEADER",
    "USER_HEADER",
    "Answer",
    "AsyncInternalClient",
    "Call",
    "ClientClosed",
    "Conflict",
    "ErrorDecoder",
    "Forbidden",
    "Gone",
    "InternalClient",
    "InvalidRequest",
    "NotFound",
    "Operation",
    "PaymentRequired",
    "RateLimited",
    "RetryPolicy",
    "ServiceError",
    "ServiceRefused",
    "ServiceUnavailable",
    "Unauthorized",
    "awaiting",
    "blocking",
]
