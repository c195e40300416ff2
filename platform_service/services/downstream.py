"""Calls to the internal services: the user's identity on each, their errors as ours.

The platform calls every service with its service token and names the end user in
``X-Gridweave-User`` (services believe it only with the token). A service's refusal that
the user must see (a bad field, a wrong code, a finished job) is passed on with its own
status, code and details; one that only a deployment fault explains (401, 403 to the
platform) is a 502; no answer is a 503 naming the service.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TypeVar

from gridweave_clients import (
    ROLE_HEADER,
    USER_HEADER,
    Operation,
    ServiceError,
    ServiceRefused,
)
from platform_service.errors import (
    DownstreamFailed,
    DownstreamRefused,
    DownstreamUnavailable,
    PlatformError,
)

__all__ = ["USER_FACING", "as_admin", "as_user", "downstream_errors", "platform_error"]

T = TypeVar("T")

#: The refusals a user can act on, passed on as they are.
USER_FACING = frozenset({400, 409, 410, 422, 429})


def as_user(operation: Operation[T], user_id: str) -> Operation[T]:
    """``operation`` sent on behalf of ``user_id`` (the identity header added)."""
    headers = {**(operation.call.headers or {}), USER_HEADER: user_id}
    return replace(operation, call=replace(operation.call, headers=headers))


def as_admin(operation: Operation[T], user_id: str) -> Operation[T]:
    """``operation`` sent on behalf of the admin ``user_id``, with the admin role (a mint)."""
    headers = {**(operation.call.headers or {}), USER_HEADER: user_id, ROLE_HEADER: "admin"}
    return replace(operation, call=replace(operation.call, headers=headers))


def platform_error(
    service: str, exc: ServiceError, *, passed: Collection[int] = USER_FACING
) -> PlatformError:
    """The platform's error for a service client's: ``passed`` statuses go to the user."""
    if isinstance(exc, ServiceRefused):
        if exc.status_code in passed:
            return DownstreamRefused(
                status_code=exc.status_code, code=exc.code, message=exc.message, **exc.details
            )
        return DownstreamFailed(
            f"{service} refused the platform's call ({exc.status_code} {exc.code})",
            service=service,
        )
    return DownstreamUnavailable(f"{service} is unavailable: try again", service=service)


@contextmanager
def downstream_errors(service: str, *, passed: Collection[int] = USER_FACING) -> Iterator[None]:
    """Raise :func:`platform_error` for a service client's error inside the block."""
    try:
        yield
    except ServiceError as exc:
        raise platform_error(service, exc, passed=passed) from exc
