"""The one exception tree of the internal service clients.

Tree::

    ServiceError                 service, operation, status_code (None: no answer)
    ├── ServiceUnavailable       unreachable, timed out, dropped, 5xx, or an answer not understood,
    │   │                        after the retry policy gave up: nothing is known to be applied
    │   └── ClientClosed         the client was closed; nothing was sent
    └── ServiceRefused           a 4xx answer: code, message, details (never retried)
        ├── InvalidRequest       400/422: ``field`` (the first one named) and ``fields``
        ├── Unauthorized         401
        ├── PaymentRequired      402  (credit: the balance cannot cover it)
        ├── Forbidden            403
        ├── NotFound             404
        ├── Conflict             409
        ├── Gone                 410
        └── RateLimited          429

A client for a service with another error format (kuberay-service answers Kubernetes
``Status`` bodies) plugs in its own :class:`~gridweave_clients.base.ErrorDecoder` and raises
its own exceptions instead.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ClientClosed",
    "Conflict",
    "Forbidden",
    "Gone",
    "InvalidRequest",
    "NotFound",
    "PaymentRequired",
    "RateLimited",
    "ServiceError",
    "ServiceRefused",
    "ServiceUnavailable",
    "Unauthorized",
    "refusal_class",
]


class ServiceError(Exception):
    """Base of every error a Gridweave service client raises."""

    def __init__(
        self,
        message: str,
        *,
        service: str,
        operation: str,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.service = service
        #: ``METHOD /path`` of the call, or the client method's name when nothing was sent
        self.operation = operation
        self.status_code = status_code


class ServiceUnavailable(ServiceError):
    """No usable answer after every attempt the retry policy allowed: safe to try later."""


class ClientClosed(ServiceUnavailable):
    """The client was closed before the call; nothing was sent."""


class ServiceRefused(ServiceError):
    """The service answered 4xx: the request itself was refused (never retried)."""

    status_code: int

    def __init__(
        self,
        message: str,
        *,
        service: str,
        operation: str,
        status_code: int,
        code: str,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            f"{service} refused {operation} ({status_code} {code}): {message}",
            service=service,
            operation=operation,
            status_code=status_code,
        )
        self.message = message
        self.code = code
        self.details: dict[str, Any] = details or {}


class InvalidRequest(ServiceRefused):
    """A bad request field (400/422 ``invalid_request``): ``field`` names the first one.

    Also raised before sending when a client method's argument breaks the very model the
    service validates with: the same error its 422 would have been, without the round trip.
    """

    @property
    def fields(self) -> list[dict[str, str]]:
        """Every bad field as ``{"field": ..., "message": ...}``."""
        fields = self.details.get("fields")
        if not isinstance(fields, list):
            return []
        return [
            {"field": str(item.get("field", "")), "message": str(item.get("message", ""))}
            for item in fields
            if isinstance(item, dict)
        ]

    @property
    def field(self) -> str | None:
        """The first bad field's name, when the answer named one."""
        fields = self.fields
        if fields:
            return fields[0]["field"]
        named = self.details.get("field")
        return named if isinstance(named, str) else None


class Unauthorized(ServiceRefused):
    """401: no service token, or an unknown one."""


class PaymentRequired(ServiceRefused):
    """402: the available balance cannot cover the amount."""


class Forbidden(ServiceRefused):
    """403: the caller's role may not do this."""


class NotFound(ServiceRefused):
    """404: no such resource."""


class Conflict(ServiceRefused):
    """409: the resource's state refuses the request (or an idempotency key was reused)."""


class Gone(ServiceRefused):
    """410: the resource expired."""


class RateLimited(ServiceRefused):
    """429: too many requests, or too soon."""


_BY_STATUS: dict[int, type[ServiceRefused]] = {
    401: Unauthorized,
    402: PaymentRequired,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    429: RateLimited,
}


def refusal_class(status_code: int, code: str) -> type[ServiceRefused]:
    """The class of a 4xx answer: by the service's error code first, the HTTP status second."""
    if code == "invalid_request" or status_code == 422:
        return InvalidRequest
    return _BY_STATUS.get(status_code, ServiceRefused)
