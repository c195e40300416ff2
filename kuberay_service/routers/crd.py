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

import inspect
import typing
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.responses import JSONResponse

from gridweave_controller.aio import AsyncCrdClient
from gridweave_controller.operations import CRD_PREFIX, OPERATIONS, Operation
from gridweave_controller.store import GROUP, VERSION
from kuberay_service.recent_objects import RecentObjects
from kuberay_service.schemas.crd import request_model

__all__ = ["router"]

router = APIRouter(prefix=CRD_PREFIX, tags=["crd"])
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


def _responder(operation: Operation[..., Any]) -> Callable[[Any], Response]:
    """How a result goes out: the raw object as the apiserver gave it, a List, or no body."""
    assert operation.route is not None
    status_code = operation.route.status_code
    result_type = operation.result_type
    if result_type is type(None):
        return lambda _result: Response(status_code=status_code)
    if typing.get_origin(result_type) is list:
        kind = typing.get_args(result_type)[0].KIND + "List"
        return lambda items: JSONResponse(
            {"apiVersion": f"{GROUP}/{VERSION}", "kind": kind, "items": [i.raw for i in items]}
        )
    return lambda item: JSONResponse(item.raw, status_code=status_code)


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
    if body is not None:
        parameters.append(inspect.Parameter("body", _KEYWORD, annotation=body))
    return parameters


def recent_objects(request: Request) -> RecentObjects:
    """The objects this app's calls were last answered (made on first use)."""
    recent: RecentObjects | None = getattr(request.app.state, "recent_objects", None)
    if recent is None:
        recent = request.app.state.recent_objects = RecentObjects()
    return recent


def _handler(operation: Operation[..., Any]) -> Callable[..., Awaitable[Response]]:
    respond = _responder(operation)
    known = operation.known_parameters
    named = operation.route.path_parameters[0] if known and operation.route else ""

    async def handle(request: Request, body: Any = None, **values: Any) -> Response:
        if body is not None:
            values.update({name: getattr(body, name) for name in type(body).model_fields})
        client = served(request)
        recent = recent_objects(request)
        for name, kind in known.items():  # a resourceVersion: the object if seen at it
            if values[name] is not None:
                values[name] = recent.recall(kind, values[named], values[name])
        result = await client.perform_operation(operation, (), values)
        recent.remember(result)
        return respond(result)

    handle.__name__ = operation.name
    handle.__doc__ = operation.__doc__
    handle.__signature__ = inspect.Signature(_parameters(operation))  # type: ignore[attr-defined]
    return handle


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
