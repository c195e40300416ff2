"""The sans-IO core of the internal client: requests, the retry policy, answers, decoding.

Nothing here does I/O; the blocking and the asyncio drivers (``base.py``) only send what
this module builds and ask it what to do with what came back, so both follow one policy.
"""

from __future__ import annotations

import inspect
import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Generic, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from gridweave_clients.errors import (
    ClientClosed,
    InvalidRequest,
    ServiceUnavailable,
    refusal_class,
)

__all__ = [
    "REPLAYED_HEADER",
    "SAFE_METHODS",
    "Answer",
    "Call",
    "ErrorDecoder",
    "Failure",
    "Operation",
    "RetryPolicy",
    "argument_fields",
    "classify_failure",
    "encode_json",
    "error_fields",
    "model_operation",
]

T = TypeVar("T")
ModelT = TypeVar("ModelT", bound=BaseModel)

#: Methods that change nothing (or, like PUT and DELETE, end in the same state when
#: repeated): always safe to send again.
#: Says whether an answer repeats an earlier call's with the same idempotency key (the
#: services set it: ``gridweave_runtime.responses.REPLAYED_HEADER``, the same name).
REPLAYED_HEADER = "Idempotent-Replayed"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


@dataclass(frozen=True, slots=True)
class Call:
    """One request to a service, relative to the client's base URL.

    ``idempotent``: the request carries an idempotency key (or another key the service
    deduplicates by, like a settlement's reference), so sending it twice applies it once.
    """

    method: str
    path: str
    body: bytes | None = None
    params: Mapping[str, str] | None = None
    headers: Mapping[str, str] | None = None
    idempotent: bool = False
    #: a long poll: the service may hold the answer this long, on top of the read timeout
    wait_seconds: float = 0.0

    @property
    def replayable(self) -> bool:
        """Whether the call may be sent again after it may have reached the service."""
        return self.idempotent or self.method in SAFE_METHODS


@dataclass(frozen=True, slots=True)
class Answer:
    """A service's whole answer: status, headers and the body, read."""

    status_code: int
    headers: httpx.Headers
    content: bytes

    @property
    def ok(self) -> bool:
        """2xx."""
        return 200 <= self.status_code < 300

    def json(self) -> Any:
        """The decoded JSON body; None when the body is empty."""
        return json.loads(self.content) if self.content else None


@dataclass(frozen=True, slots=True)
class Operation(Generic[T]):
    """A typed call: what to send and how to read a 2xx answer's body (``read``, when set,
    reads the whole answer instead: its headers too)."""

    call: Call
    parse: Callable[[bytes], T]
    read: Callable[[Answer], T] | None = None


class Failure(Enum):
    """Why an attempt brought no usable answer."""

    NOT_SENT = "not sent"  # connect error or timeout, no pooled connection free: nothing left
    LOST = "lost"  # sent, but the answer timed out or the connection dropped
    SERVER_ERROR = "server error"  # a 5xx the policy retries


# Nothing reached the service: the request never left this process.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# The request may have reached the service and been applied; its answer is lost.
_LOST = (
    httpx.ReadTimeout,
    httpx.WriteTimeout,
    httpx.ReadError,
    httpx.WriteError,
    httpx.RemoteProtocolError,
)


def classify_failure(exc: httpx.TransportError) -> Failure | None:
    """What a transport error means for a retry; None: not worth another attempt."""
    if isinstance(exc, _NOT_SENT):
        return Failure.NOT_SENT
    if isinstance(exc, _LOST):
        return Failure.LOST
    return None  # an unsupported scheme, a bad URL, a proxy error: the same next time


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """The one retry policy of every internal client.

    - a call that was not sent (connect error or timeout) is tried again, whatever it is;
    - a call that may have been applied (timeout, dropped connection, or a 5xx in
      ``retry_statuses``) is tried again only when it is replayable: a read, a PUT or a
      DELETE, or a write carrying an idempotency key;
    - a 4xx is final. At most ``attempts`` attempts, with jittered exponential backoff.
    """

    attempts: int = 3
    backoff_seconds: float = 0.05
    max_backoff_seconds: float = 2.0
    retry_statuses: frozenset[int] = field(default=frozenset({500, 502, 503, 504}))

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        if self.backoff_seconds < 0 or self.max_backoff_seconds < 0:
            raise ValueError("backoff must not be negative")

    def retries(self, call: Call, attempt: int, failure: Failure) -> bool:
        """Whether attempt number ``attempt`` (1-based), failed so, is followed by another."""
        if attempt >= self.attempts:
            return False
        return failure is Failure.NOT_SENT or call.replayable

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt ``attempt``: doubling, jittered 0.5x-1.5x."""
        base = min(self.max_backoff_seconds, self.backoff_seconds * 2.0 ** (attempt - 1))
        return base * (0.5 + random.random())

    def retries_answer(self, call: Call, attempt: int, answer: Answer) -> bool:
        """Whether a non-2xx answer to attempt ``attempt`` is followed by another attempt."""
        return answer.status_code in self.retry_statuses and self.retries(
            call, attempt, Failure.SERVER_ERROR
        )


class ErrorDecoder:
    """Turns what went wrong into an exception: Gridweave's ``{"error": ...}`` bodies.

    A client for a service with another error format subclasses it and overrides the
    methods (kuberay-service's ``Status`` bodies become the controller's exceptions).
    """

    def __init__(self, service: str) -> None:
        self.service = service

    def refused(self, call: Call, answer: Answer) -> Exception:
        """The final non-2xx answer: 4xx -> a ServiceRefused subclass, else unavailable."""
        operation = f"{call.method} {call.path}"
        if not 400 <= answer.status_code < 500:
            return ServiceUnavailable(
                f"{self.service} {operation} answered HTTP {answer.status_code}",
                service=self.service,
                operation=operation,
                status_code=answer.status_code,
            )
        code, message, details = error_fields(answer)
        return refusal_class(answer.status_code, code)(
            message,
            service=self.service,
            operation=operation,
            status_code=answer.status_code,
            code=code,
            details=details,
        )

    def unavailable(self, call: Call, reason: str) -> Exception:
        """No usable answer: unreachable, timed out, dropped, or an answer not understood."""
        operation = f"{call.method} {call.path}"
        return ServiceUnavailable(
            f"{self.service} {operation}: {reason}", service=self.service, operation=operation
        )

    def closed(self, call: Call) -> Exception:
        """The client was closed: nothing is sent."""
        return ClientClosed(
            f"the {self.service} client was closed",
            service=self.service,
            operation=f"{call.method} {call.path}",
        )

    def invalid_arguments(self, operation: str, fields: list[dict[str, str]]) -> Exception:
        """A client method's arguments broke the request's model: nothing is sent."""
        names = ", ".join(item["field"] for item in fields)
        return InvalidRequest(
            f"invalid fields: {names}",
            service=self.service,
            operation=operation,
            status_code=422,
            code="invalid_request",
            details={"fields": fields},
        )


def error_fields(answer: Answer) -> tuple[str, str, dict[str, Any]]:
    """(code, message, details) of a Gridweave error body, with fallbacks for any other."""
    fallback_code = f"http_{answer.status_code}"
    try:
        body = answer.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):  # not JSON (a proxy's page), or not an object
        text = answer.content[:200].decode("utf-8", "replace").strip()
        return fallback_code, text or f"HTTP {answer.status_code}", {}
    error = body.get("error")
    if not isinstance(error, dict):  # some other JSON error format: {"detail": ...}
        detail = body.get("detail", body.get("message", ""))
        return fallback_code, str(detail) or f"HTTP {answer.status_code}", {}
    details = {key: value for key, value in error.items() if key not in {"code", "message"}}
    code = str(error.get("code") or fallback_code)
    return code, str(error.get("message") or f"HTTP {answer.status_code}"), details


def argument_fields(function: Callable[..., Any], error: ValidationError) -> list[dict[str, str]]:
    """The bad arguments of a ``validate_call`` function, each named by its parameter."""
    positional = list(inspect.signature(function).parameters)
    fields = []
    for item in error.errors():
        location = list(item["loc"])
        if location and isinstance(location[0], int) and location[0] < len(positional):
            location[0] = positional[location[0]]  # a positional argument: its name
        name = ".".join(str(part) for part in location) or "arguments"
        fields.append({"field": name, "message": item["msg"]})
    return fields


def encode_json(value: Any) -> bytes:
    """Compact JSON; NaN and infinity are refused (JSON has no such numbers)."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False).encode()


def model_operation(
    method: str,
    path: str,
    response_type: type[ModelT],
    *,
    body: BaseModel | None = None,
    params: Mapping[str, str] | None = None,
    idempotent: bool = False,
    wait_seconds: float = 0.0,
) -> Operation[ModelT]:
    """An operation sending ``body`` (a request model) and reading a ``response_type``."""
    call = Call(
        method,
        path,
        body=None if body is None else body.model_dump_json(exclude_none=True).encode(),
        params=params,
        idempotent=idempotent,
        wait_seconds=wait_seconds,
    )
    return Operation(call, response_type.model_validate_json)
