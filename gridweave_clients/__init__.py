"""Clients of Gridweave's internal services over one internal HTTP client base.

Importable without the server extras (httpx and pydantic only): services and the SDK use
it, and it never imports a server. ``gridweave_clients.credit``, ``.metering`` and
``.faucet`` hold each service's client and wire models; :mod:`gridweave_clients.base` the
base a client for another service is built on.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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


#: Imported on first use: importing one module of the package (a Ray worker importing the
#: reasons, say) does not load every client and httpx.
_EXPORTS = {
    "Answer": "gridweave_clients._core",
    "AsyncInternalClient": "gridweave_clients.base",
    "Call": "gridweave_clients._core",
    "ClientClosed": "gridweave_clients.errors",
    "Conflict": "gridweave_clients.errors",
    "ErrorDecoder": "gridweave_clients._core",
    "Forbidden": "gridweave_clients.errors",
    "Gone": "gridweave_clients.errors",
    "InternalClient": "gridweave_clients.base",
    "InvalidRequest": "gridweave_clients.errors",
    "NotFound": "gridweave_clients.errors",
    "Operation": "gridweave_clients._core",
    "PaymentRequired": "gridweave_clients.errors",
    "ROLE_HEADER": "gridweave_clients.base",
    "RateLimited": "gridweave_clients.errors",
    "RetryPolicy": "gridweave_clients._core",
    "ServiceError": "gridweave_clients.errors",
    "ServiceRefused": "gridweave_clients.errors",
    "ServiceUnavailable": "gridweave_clients.errors",
    "USER_HEADER": "gridweave_clients.base",
    "Unauthorized": "gridweave_clients.errors",
    "awaiting": "gridweave_clients.base",
    "blocking": "gridweave_clients.base",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
