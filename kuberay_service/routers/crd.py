"""``/v1/crd``: the controller library's typed operations over HTTP, one route each.

The routes are derived from the operations' declarations
(:data:`gridweave_controller.operations.OPERATIONS`): each awaits its operation on the
app's :class:`~gridweave_controller.aio.AsyncCrdClient` (the same typed flows
``gridweave_controller.crd`` runs, on the official asyncio client), so phase rules,
conditions and the read-modify-write loop run here, next to the cluster, on the event loop.
A caller's copy of the object (``known=``) arrives as a resourceVersion and becomes the
object this app was last answered, if it was at that version
(:mod:`kuberay_service.recent_objects`).
Objects travel as the raw Kubernetes objects; errors as Status bodies
(``kuberay_service.errors``). Every route needs the internal service token, checked for
every non-public path by the app's token middleware (``gridweave_runtime.auth``).
"""

from __future__ import annotations

import asyncio
import inspect
import typing
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError

from gridweave_controller.aio import AsyncCrdClient
from gridweave_controller.errors import CrdError
from gridweave_controller.operations import (
    BATCH_PATH,
    BATCHABLE,
    CRD_PREFIX,
    OPERATIONS,
    Operation,
)
from gridweave_controller.store import GROUP, VERSION
from kuberay_service.errors import invalid_status, status_of
from kuberay_service.recent_objects import RecentObjects
from kuberay_service.schemas.crd import BatchCall, BatchRequest, request_model

__all__ = ["CRD_ROLES", "router"]

router = APIRouter(prefix=CRD_PREFIX, tags=["crd"])
#: Who may call anything under ``/v1/crd`` (the watches too): the gateway, which makes every
#: CRD call, and admins. The app checks it with the credential (``prefix_roles``).
CRD_ROLES = ("gateway", "admin")
#: The longest query value accepted (a label selector); longer ones are a 422.
MAX_QUERY_LENGTH = 4096
_KEYWORD = inspect.Parameter.KEYWORD_ONLY


def served(request: Request) -> AsyncCrdClient:
    """The typed client this app serves (set by ``create_app`` or when it starts serving).

    Read from the app's state rather than injected as a dependency: FastAPI solves
    dependencies on every request, a measurable part of a proxied call's cost
    (docs/benchmarks.md).
    """
    client: AsyncCrdClient = request.app.state.crd_client
    return client


def _wire_result(operation: Operation[..., Any], result: Any) -> Any:
    """A result as it travels: the raw object as the apiserver gave it, a List, or None."""
    if result is None:
        return None
    if isinstance(result, list):
        kind = typing.get_args(operation.result_type)[0].KIND + "List"
        return {"apiVersion": f"{GROUP}/{VERSION}", "kind": kind, "items": [i.raw for i in result]}
    return result.raw


def _responder(operation: Operation[..., Any]) -> Callable[[Any], Response]:
    """How a result goes out: its wire form with the route's code, or no body."""
    assert operation.route is not None
    status_code = operation.route.status_code
    if operation.result_type is type(None):
        return lambda _result: Response(status_code=status_code)
    return lambda result: JSONResponse(_wire_result(operation, result), status_code=status_code)


def _parameters(operation: Operation[..., Any]) -> list[inspect.Parameter]:
    """The route handler's parameters: the request, path and query values, the body."""
    assert operation.route is not None
    route = operation.route
    parameters = [inspect.Parameter("request", _KEYWORD, annotation=Request)]
    for name in route.path_parameters:
        parameters.append(inspect.Parameter(name, _KEYWORD, annotation=Annotated[str, Path()]))
    if route.method == "GET":
        for name, declared in operation.signature.parameters.items():
            if name in route.path_parameters:
                continue
            query = Query(alias=route.wire_name(name), max_length=MAX_QUERY_LENGTH)
            value_type: Any = operation.parameter_types[name]
            annotation = Annotated[value_type, query]
            parameters.append(
                inspect.Parameter(name, _KEYWORD, annotation=annotation, default=declared.default)
            )
    body = request_model(operation)
    if body is not None and _body_optional(body):
        # every field has its default (a setter called without its copy): no body needed
        parameters.append(inspect.Parameter("body", _KEYWORD, annotation=body | None, default=None))
    elif body is not None:
        parameters.append(inspect.Parameter("body", _KEYWORD, annotation=body))
    return parameters


def _body_optional(model: type[BaseModel]) -> bool:
    return not any(field.is_required() for field in model.model_fields.values())


def recent_objects(request: Request) -> RecentObjects:
    """The objects this app's calls were last answered (made on first use)."""
    recent: RecentObjects | None = getattr(request.app.state, "recent_objects", None)
    if recent is None:
        recent = request.app.state.recent_objects = RecentObjects()
    return recent


async def _perform(request: Request, operation: Operation[..., Any], values: dict[str, Any]) -> Any:
    """Run ``operation`` with the route's ``values`` on the served client; its result.

    A caller's copy of the object (``known=``) arrives as a resourceVersion and becomes the
    object this app was last answered at that version, or None.
    """
    recent = recent_objects(request)
    known = operation.known_parameters
    if known and operation.route is not None:
        named = values[operation.route.path_parameters[0]]
        for name, kind in known.items():
            if values[name] is not None:
                values[name] = recent.recall(kind, named, values[name])
    result = await served(request).perform_operation(operation, (), values)
    recent.remember(result)
    return result


def _handler(operation: Operation[..., Any]) -> Callable[..., Awaitable[Response]]:
    respond = _responder(operation)
    model = request_model(operation)

    async def handle(request: Request, body: Any = None, **values: Any) -> Response:
        if body is None and model is not None:  # an optional body left out: its defaults
            body = model()
        if body is not None:
            values.update({name: getattr(body, name) for name in type(body).model_fields})
        return respond(await _perform(request, operation, values))

    handle.__name__ = operation.name
    handle.__doc__ = operation.__doc__
    handle.__signature__ = inspect.Signature(_parameters(operation))  # type: ignore[attr-defined]
    return handle


def _batch_values(operation: Operation[..., Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """One batched call's arguments as its route's handler would have them.

    Raises pydantic's ValidationError, located at the wire name, as the route would.
    """
    assert operation.route is not None
    path = {operation.route.wire_name(name): name for name in operation.route.path_parameters}
    values = {name: arguments.get(wire) for wire, name in path.items()}
    body = {key: value for key, value in arguments.items() if key not in path}
    model = request_model(operation)
    refused: list[Any] = [
        {"type": "string_type", "loc": (wire,), "input": values[name]}
        for wire, name in path.items()
        if not isinstance(values[name], str)
    ]
    if model is None:
        refused += [{"type": "extra_forbidden", "loc": (key,), "input": body[key]} for key in body]
    if refused:
        raise ValidationError.from_exception_data(operation.name, refused)
    if model is not None:
        parsed = model.model_validate(body)
        values.update({name: getattr(parsed, name) for name in type(parsed).model_fields})
    return values


async def _batched(request: Request, call: BatchCall) -> dict[str, Any]:
    """One call of a batch: ``{"code", "body"}`` as its own route would have answered."""
    operation = BATCHABLE[call.operation]
    assert operation.route is not None
    try:
        result = await _perform(request, operation, _batch_values(operation, call.arguments))
    except CrdError as error:
        code, status = status_of(error)
        return {"code": code, "body": status}
    except ValidationError as error:
        return {"code": 422, "body": invalid_status(error.errors())}
    return {"code": operation.route.status_code, "body": _wire_result(operation, result)}


@router.post(BATCH_PATH, name="batch", operation_id="batch", response_class=JSONResponse)
async def batch(request: Request, body: BatchRequest) -> JSONResponse:
    """Several writes in one request, run concurrently; their answers in order.

    Each call is the route of its operation, checked and answered as that route would be
    (an answer's ``code`` and ``body``); one refused call does not stop the others. A busy
    client sends its writes this way (``AsyncProxiedClient``): one request's cost for many.
    """
    results = await asyncio.gather(*(_batched(request, call) for call in body.calls))
    return JSONResponse({"kind": "BatchResult", "results": results})


for _operation in OPERATIONS:
    if _operation.route is not None:
        router.add_api_route(
            _operation.route.path,
            _handler(_operation),
            methods=[_operation.route.method],
            status_code=_operation.route.status_code,
            name=_operation.name,
            operation_id=_operation.name,
            response_class=JSONResponse,
        )
