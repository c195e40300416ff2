"""Request bodies of ``/v1/crd``, derived from each operation's declared parameters.

camelCase on the wire, the controller's parameters inside. Value rules (DNS-1123 names,
label values, phase moves) belong to the controller library and are checked there, so the
direct and the proxied transports refuse exactly the same input; these models check only
the JSON shape and refuse unknown fields.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from types import UnionType
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator
from pydantic.alias_generators import to_camel, to_pascal
from pydantic_core import PydanticCustomError

from gridweave_clients.fields import MAX_UNKNOWN_FIELDS
from gridweave_controller.operations import BATCHABLE, MAX_BATCH_CALLS, Operation

__all__ = ["BatchCall", "BatchRequest", "request_model", "wire_type"]


class RequestBody(BaseModel):
    """The base of every ``/v1/crd`` request body.

    More than ``MAX_UNKNOWN_FIELDS`` unknown fields are refused at once as one error, before
    each is checked: the work and the answer never grow with the input.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        allow_inf_nan=True,  # the controller refuses non-finite numbers, naming the parameter
        strict=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _refuse_many_unknown_fields(cls, data: Any) -> Any:
        if isinstance(data, dict) and len(data) > len(cls.model_fields) + MAX_UNKNOWN_FIELDS:
            raise PydanticCustomError(
                "too_many_unknown_fields",
                "more than {limit} unknown fields",
                {"limit": MAX_UNKNOWN_FIELDS},
            )
        return data


def wire_type(annotation: Any) -> Any:
    """What JSON carries for a parameter type: abstract collections become list and dict."""
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if origin in (Union, UnionType):
        converted = tuple(wire_type(argument) for argument in arguments)
        return Union[converted]  # noqa: UP007 - built from a runtime tuple
    if origin in (Sequence, Iterable, list, tuple) and arguments:
        return list[wire_type(arguments[0])]  # type: ignore[misc]
    if origin in (Mapping, dict) and arguments:
        return dict[wire_type(arguments[0]), wire_type(arguments[1])]  # type: ignore[misc]
    return annotation


@cache
def request_model(operation: Operation[..., Any]) -> type[RequestBody] | None:
    """The JSON body of ``operation``'s route (None when nothing travels in a body)."""
    route = operation.route
    if route is None or route.method == "GET":
        return None
    in_path = set(route.path_parameters)
    fields: dict[str, Any] = {}
    for name, parameter in operation.signature.parameters.items():
        if name in in_path:
            continue
        default = ... if parameter.default is parameter.empty else parameter.default
        annotation = operation.parameter_types[name]
        if name in operation.known_parameters:
            annotation = str | None  # a caller's copy travels as its resourceVersion
        fields[name] = (wire_type(annotation), default)
    if not fields:
        return None
    model: type[RequestBody] = create_model(
        f"{to_pascal(operation.name)}Request",
        __base__=RequestBody,
        __doc__=f"The body of ``{route.method} {route.path}``: {operation.__doc__}",
        **fields,
    )
    return model


#: The wire names one call of a batch may carry: its route's parameters (camelCase, the
#: path's included); the arguments are checked by the operation's own request model.
_MAX_BATCH_ARGUMENTS = 64 + MAX_UNKNOWN_FIELDS


class BatchCall(BaseModel):
    """One write of a batch: the operation's name and its arguments as its route takes them."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    operation: Literal[tuple(BATCHABLE)]  # type: ignore[valid-type]
    arguments: Annotated[dict[str, Any], Field(max_length=_MAX_BATCH_ARGUMENTS)] = {}


class BatchRequest(BaseModel):
    """The body of ``POST /v1/crd/batch``: up to ``MAX_BATCH_CALLS`` writes."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    calls: Annotated[list[BatchCall], Field(min_length=1, max_length=MAX_BATCH_CALLS)]
