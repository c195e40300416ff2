"""What the blocking and the asyncio drivers share: the request they build, the decisions."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

import httpx

from gridweave_clients._core import (
    Answer,
    Call,
    ErrorDecoder,
    Operation,
    RetryPolicy,
    classify_failure,
    encode_json,
)

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_TIMEOUT",
    "ROLE_HEADER",
    "SOCKET_OPTIONS",
    "USER_HEADER",
    "DriverBase",
]

T = TypeVar("T")

#: Identity headers: believed by a service only with its service token (gridweave_runtime).
USER_HEADER = "X-Gridweave-User"
ROLE_HEADER = "X-Gridweave-Role"
DEFAULT_TIMEOUT = httpx.Timeout(10.0, connect=5.0)
#: A request's headers and body go out in two writes; without TCP_NODELAY, Nagle's algorithm
#: holds the body back until the headers are acknowledged.
SOCKET_OPTIONS = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
DEFAULT_LIMITS = httpx.Limits(max_connections=64, max_keepalive_connections=32)
_JSON = "application/json"


class DriverBase:
    """What both drivers share: the request they build and the decisions they ask for."""

    #: The service's name in error messages (a subclass sets it).
    service: ClassVar[str] = "service"

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        role: str | None = None,
        user: str | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        decoder: ErrorDecoder | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if not token:
            raise ValueError(f"a service token is required to call {self.service}")
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self.decoder = decoder or ErrorDecoder(self.service)
        self._headers = {
            "Authorization": f"Bearer {token}",
            "Accept": _JSON,
            "User-Agent": f"gridweave-clients ({self.service})",
        }
        if role is not None:
            self._headers[ROLE_HEADER] = role
        if user is not None:
            self._headers[USER_HEADER] = user
        self._headers.update(headers or {})
        self._body_headers = {**self._headers, "Content-Type": _JSON}
        timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        self._extensions = {"timeout": timeout.as_dict()}
        self.closed = False

    def _request(self, call: Call) -> httpx.Request:
        headers = self._headers if call.body is None else self._body_headers
        if call.headers:
            headers = {**headers, **call.headers}
        extensions = self._extensions
        if call.wait_seconds > 0:  # a long poll: the answer may come that much later
            timeout = dict(extensions["timeout"])
            read = timeout.get("read")
            if read is not None:
                timeout["read"] = read + call.wait_seconds
            extensions = {"timeout": timeout}
        return httpx.Request(
            call.method,
            self.base_url + call.path,
            params=call.params,
            headers=headers,
            content=call.body,
            extensions=extensions,
        )

    def _failed(self, call: Call, attempt: int, exc: httpx.TransportError) -> float:
        """The delay before the next attempt; raises the decoder's error when none follows."""
        failure = classify_failure(exc)
        if failure is None or not self.retry.retries(call, attempt, failure):
            raise self.decoder.unavailable(call, f"{type(exc).__name__}: {exc}") from exc
        return self.retry.delay(attempt)

    def _answered(self, call: Call, attempt: int, answer: Answer) -> float | None:
        """None: the answer is final and a 2xx; else the delay before the next attempt."""
        if answer.ok:
            return None
        if not self.retry.retries_answer(call, attempt, answer):
            raise self.decoder.refused(call, answer)
        return self.retry.delay(attempt)

    def _parsed(self, operation: Operation[T], answer: Answer) -> T:
        try:
            if operation.read is not None:
                return operation.read(answer)
            return operation.parse(answer.content)
        except ValueError as exc:  # pydantic's ValidationError and json's errors are ValueErrors
            raise self.decoder.unavailable(
                operation.call, f"an answer not understood: {exc}"
            ) from None

    def _decoded(self, call: Call, answer: Answer) -> Any:
        try:
            return answer.json()
        except ValueError as exc:
            raise self.decoder.unavailable(call, f"an answer that is not JSON: {exc}") from None

    @staticmethod
    def _call(
        method: str,
        path: str,
        json: Any,
        params: Mapping[str, str] | None,
        headers: Mapping[str, str] | None,
        idempotent: bool,
    ) -> Call:
        body = None if json is None else encode_json(json)
        return Call(method, path, body, params, headers, idempotent)
