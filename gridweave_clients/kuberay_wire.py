"""How the controller's operations travel to kuberay-service's ``/v1/crd``, and back.

A call becomes the request its declaration names (:func:`request_for`), or one call of a
batch (:func:`batch_call_for`); a 2xx answer becomes the typed result (:func:`result_from`,
:func:`decode_result`) and a refusal the controller's own exception
(:func:`error_from_answer`: kuberay-service answers Kubernetes ``Status`` bodies).

On the wire: path parameters are checked as object names before anything is sent; a GET
sends the other arguments as query parameters (None left out), any other method as a
JSON body with camelCase keys. A caller's copy of the object (``known=`` of a setter)
travels as its resourceVersion only.
"""

from __future__ import annotations

import math
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from typing import Any, cast

from gridweave_clients._core import Answer, Call, encode_json
from gridweave_controller._objects import check_known
from gridweave_controller.errors import (
    CrdError,
    Invalid,
    TransportError,
    error_from_status,
    parse_status_body,
)
from gridweave_controller.operations import CRD_PREFIX, Operation, Route
from gridweave_controller.validation import check_name

__all__ = [
    "SERVICE",
    "batch_call_for",
    "decode_result",
    "error_from_answer",
    "error_from_status_answer",
    "request_for",
    "result_from",
]

SERVICE = "kuberay-service"


def error_from_answer(status_code: int, content: bytes) -> CrdError:
    """The controller error a non-2xx answer's Status names (TransportError without one)."""
    status = parse_status_body(content)
    if status is None:
        return TransportError(f"{SERVICE} answered HTTP {status_code}: {content[:500]!r}")
    return error_from_status_answer(status_code, status)


def error_from_status_answer(status_code: int, status: Mapping[str, Any]) -> CrdError:
    """The controller error of a non-2xx answer whose body is the Status ``status``."""
    fallback = f"{SERVICE} answered HTTP {status_code}"
    error = error_from_status(status, status_code, fallback=fallback)
    if isinstance(error, Invalid) and error.field is not None and error.field.isidentifier():
        # The wire names are the parameters in camelCase; name the parameter, as the direct
        # transport does.
        error.field = parameter_name(error.field)
    return error


def parameter_name(wire_name: str) -> str:
    """The parameter a camelCase wire name stands for: an underscore before each capital
    only, so digits stay with their word (``resultSha256`` -> ``result_sha256``, where
    pydantic's ``to_snake`` would give ``result_sha_256``)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", wire_name).lower()


_PLAIN = frozenset({str, int, bool, type(None)})


def _wire_value(name: str, value: Any) -> Any:
    if type(value) in _PLAIN:
        return value
    if isinstance(value, float) and not math.isfinite(value):  # JSON cannot carry it
        raise Invalid(f"{name} must be a finite number, not {value!r}", field=name)
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return list(value)
    return value


def request_for(
    operation: Operation[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Call:
    """The request that performs ``operation(*args, **kwargs)`` on kuberay-service."""
    route = _routed(operation)
    path, names, arguments = _wire_arguments(operation, args, kwargs)
    if route.method == "GET":
        params = {route.wire_name(k): str(v) for k, v in arguments.items() if v is not None}
        return Call("GET", path, params=params or None)
    body = {route.wire_name(k): _wire_value(k, v) for k, v in arguments.items()}
    return Call(route.method, path, body=encode_json(body) if body else None)


def batch_call_for(
    operation: Operation[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """``operation(*args, **kwargs)`` as one call of a batch: its name and wire arguments."""
    route = _routed(operation)
    _, names, arguments = _wire_arguments(operation, args, kwargs)
    wire = {route.wire_name(k): _wire_value(k, v) for k, v in arguments.items()}
    wire.update(zip(map(route.wire_name, route.path_parameters), names, strict=True))
    return {"operation": operation.name, "arguments": wire}


def _routed(operation: Operation[..., Any]) -> Route:
    if operation.route is None:
        raise TypeError(f"{operation.name} has no route: it is composed on the client")
    return operation.route


def _wire_arguments(
    operation: Operation[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[str, list[str], dict[str, Any]]:
    """The call's path under ``/v1/crd``, its path values (checked names), the other arguments.

    A caller's copy of the object becomes its resourceVersion (left out when None).
    """
    route = _routed(operation)
    arguments = operation.arguments(args, kwargs)
    path = route.path
    names = [check_name(arguments.pop(name), field=name) for name in route.path_parameters]
    for name, value in zip(route.path_parameters, names, strict=True):
        path = path.replace("{" + name + "}", value)
    for name, kind in operation.known_parameters.items():
        if arguments[name] is None:  # no copy: the wire stays what it was without one
            del arguments[name]
        else:
            known = check_known(arguments[name], kind, names[0], field=name)
            arguments[name] = known.raw["metadata"]["resourceVersion"]
    return CRD_PREFIX + path, names, arguments


@cache
def _decoder(result_type: Any) -> Callable[[Any], Any]:
    if result_type is type(None):
        return lambda _body: None
    if typing.get_origin(result_type) is list:
        (model,) = typing.get_args(result_type)
        return lambda body: [model.from_raw(raw) for raw in body["items"]]
    return cast(Callable[[Any], Any], result_type.from_raw)


def result_from(operation: Operation[..., Any], answer: Answer) -> Any:
    """The typed result of a 2xx answer."""
    return decode_result(operation, answer.json())


def decode_result(operation: Operation[..., Any], body: Any) -> Any:
    """The typed result of a 2xx answer's decoded JSON body."""
    return _decoder(operation.result_type)(body)
