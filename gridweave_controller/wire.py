"""The ``/v1/crd`` wire format of every operation, derived from its declaration (sans-IO).

A proxied client turns a call into a :class:`WireRequest` with :func:`request_for` and the
answer back into the typed result (or the controller's own exception) with
:func:`result_from`; kuberay-service serves the same routes
(``kuberay_service.routers.crd``). Path parameters are checked as object names before
anything is sent; a GET sends the other arguments as query parameters (None left out), any
other method as a JSON body with camelCase keys.
"""

from __future__ import annotations

import json
import math
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from pydantic.alias_generators import to_snake

from gridweave_controller.errors import (
    Invalid,
    TransportError,
    error_from_status,
    parse_status_body,
)
from gridweave_controller.models import Endpoint, Job
from gridweave_controller.operations import Operation
from gridweave_controller.validation import check_name

__all__ = ["PREFIX", "WireRequest", "kind_of", "request_for", "result_from"]

#: Where kuberay-service serves the operations.
PREFIX = "/v1/crd"
_KINDS: dict[type[Any], str] = {Job: "GridweaveJob", Endpoint: "GridweaveEndpoint"}


@dataclass(frozen=True, slots=True)
class WireRequest:
    """One HTTP request: method, path under :data:`PREFIX`, query and JSON body."""

    method: str
    path: str
    params: dict[str, str] | None
    json: dict[str, Any] | None
    #: Whether sending it twice is harmless (a read: retried after a dropped connection).
    idempotent: bool


def kind_of(model: type[Any]) -> str:
    """The Kubernetes kind a typed model reads (``Job`` -> ``GridweaveJob``)."""
    return _KINDS[model]


def _wire_value(name: str, value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):  # JSON cannot carry it
        raise Invalid(f"{name} must be a finite number, not {value!r}", field=name)
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return list(value)
    return value


def request_for(
    operation: Operation[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> WireRequest:
    """The request that performs ``operation(*args, **kwargs)`` on kuberay-service."""
    route = operation.route
    if route is None:
        raise TypeError(f"{operation.name} has no route: it is composed on the client")
    arguments = operation.arguments(args, kwargs)
    path = route.path
    for name in route.path_parameters:
        value = arguments.pop(name)
        path = path.replace("{" + name + "}", check_name(value, field=name))
    if route.method == "GET":
        params = {route.wire_name(k): str(v) for k, v in arguments.items() if v is not None}
        return WireRequest("GET", path, params or None, None, idempotent=True)
    body = {route.wire_name(k): _wire_value(k, v) for k, v in arguments.items()}
    return WireRequest(route.method, path, None, body or None, idempotent=False)


@cache
def _decoder(result_type: Any) -> Any:
    if result_type is type(None):
        return lambda _body: None
    if typing.get_origin(result_type) is list:
        (model,) = typing.get_args(result_type)
        return lambda body: [model.from_raw(raw) for raw in body["items"]]
    return result_type.from_raw


def result_from(operation: Operation[..., Any], status_code: int, content: bytes) -> Any:
    """The typed result of a 2xx answer; else raise the controller error its Status names."""
    if 200 <= status_code < 300:
        decode = _decoder(operation.result_type)
        return decode(json.loads(content) if content else None)
    status = parse_status_body(content)
    fallback = f"kuberay-service answered HTTP {status_code}"
    if status is None:
        raise TransportError(f"{fallback}: {content[:500]!r}")
    error = error_from_status(status, status_code, fallback=fallback)
    if isinstance(error, Invalid) and error.field is not None and error.field.isidentifier():
        # The wire names are the parameters in camelCase; name the parameter, as the direct
        # transport does.
        error.field = to_snake(error.field)
    raise error
