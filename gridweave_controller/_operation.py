"""Each typed operation declared once: its flow, its HTTP route, and how a client runs it.

An operation is a flow (see :mod:`gridweave_controller._flow`) declared as a method of an
operations class and decorated with its route under kuberay-service's ``/v1/crd``::

    class JobOperations:
        @operation(post("/jobs/{job_id}/running"))
        def set_job_running(self: FlowContext, job_id: str) -> Flow[Job]:
            \"\"\"Allocated -> Running.\"\"\"
            ...

The decorator makes it an :class:`Operation`, a descriptor. A class that inherits the
operations and one runner gets each operation as a method with the flow's parameters,
docstring and result: on a :class:`BlockingRunner` ``client.set_job_running`` is
``(job_id: str) -> Job``, on an :class:`AsyncRunner` it returns a coroutine of ``Job``.
Type checkers see exactly that through :meth:`Operation.__get__`'s overloads; at run time
the method calls the runner's ``perform_operation`` (run the flow on a store, send the
route over HTTP, or hand it to another client). kuberay-service's routes and their request
models are derived from the same declarations, so adding an operation is one method here.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any, Concatenate, Generic, Literal, ParamSpec, TypeVar, overload

from pydantic.alias_generators import to_camel

from gridweave_controller._flow import Flow, FlowContext
from gridweave_controller.models import Endpoint, Job

__all__ = [
    "BATCH_PATH",
    "CRD_PREFIX",
    "MAX_BATCH_CALLS",
    "AsyncRunner",
    "BlockingRunner",
    "Operation",
    "Route",
    "delete",
    "get",
    "operation",
    "post",
]

#: Where kuberay-service serves the routes of the operations.
CRD_PREFIX = "/v1/crd"
#: Where kuberay-service takes several writes in one request, under ``/v1/crd``: each call
#: names its operation and carries its arguments as its own route would (camelCase, path
#: parameters included); each answer is the code and body that route would give.
BATCH_PATH = "/batch"
#: The most calls one batch may carry.
MAX_BATCH_CALLS = 64
_P = ParamSpec("_P")
_T = TypeVar("_T")
_FLOW_PREFIX = "Flow["
_PATH_PARAMETER = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True, slots=True)
class Route:
    """Where kuberay-service serves an operation, under ``/v1/crd``.

    Path parameters are named in braces; a GET sends the other arguments as query
    parameters, any other method as a JSON body; wire names are the parameters in camelCase.
    """

    method: Literal["GET", "POST", "DELETE"]
    path: str
    status_code: int = 200

    @property
    def path_parameters(self) -> tuple[str, ...]:
        """The parameters that travel in the path, in order."""
        return tuple(_PATH_PARAMETER.findall(self.path))

    @staticmethod
    @cache
    def wire_name(parameter: str) -> str:
        """A parameter's name on the wire: ``gpu_indices`` -> ``gpuIndices``."""
        return to_camel(parameter)


def get(path: str) -> Route:
    """A read served at ``GET path``."""
    return Route("GET", path)


def post(path: str, *, status_code: int = 200) -> Route:
    """A write served at ``POST path``."""
    return Route("POST", path, status_code)


def delete(path: str) -> Route:
    """A delete served at ``DELETE path`` (204, no body)."""
    return Route("DELETE", path, 204)


def _result_annotation(flow_annotation: Any) -> Any:
    # ``from __future__ import annotations`` keeps annotations as text: "Flow[Job]" -> "Job"
    if isinstance(flow_annotation, str) and flow_annotation.startswith(_FLOW_PREFIX):
        return flow_annotation[len(_FLOW_PREFIX) : -1]
    return flow_annotation


class Operation(Generic[_P, _T]):
    """One typed operation: a flow over a :class:`FlowContext` and its HTTP route (if any).

    An operation without a route is composed on the client from routed reads
    (``wait_for_job`` polls ``get_job``).
    """

    def __init__(
        self, flow: Callable[Concatenate[FlowContext, _P], Flow[_T]], route: Route | None
    ) -> None:
        self.flow = flow
        self.route = route
        self.name: str = flow.__name__
        self.__doc__ = flow.__doc__
        declared = inspect.signature(flow)
        self.signature = declared.replace(
            parameters=list(declared.parameters.values())[1:],
            return_annotation=_result_annotation(declared.return_annotation),
        )

    def __repr__(self) -> str:
        return f"<operation {self.name}{self.signature}>"

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> Operation[_P, _T]: ...

    @overload
    def __get__(self, instance: BlockingRunner, owner: type[Any]) -> Callable[_P, _T]: ...

    @overload
    def __get__(
        self, instance: AsyncRunner, owner: type[Any]
    ) -> Callable[_P, Coroutine[Any, Any, _T]]: ...

    def __get__(self, instance: object, owner: type[Any] | None = None) -> Any:
        if instance is None:
            return self
        if not isinstance(instance, BlockingRunner | AsyncRunner):
            raise TypeError(f"{type(instance).__name__} runs no operations")
        method = instance.bind_operation(self)
        # A non-data descriptor: the bound method cached on the instance is found first
        # from now on, so a call costs one closure call, not a bind.
        instance.__dict__[self.name] = method
        return method

    def describe(self, method: Callable[..., Any], owner: str) -> None:
        """Give ``method`` (of class ``owner``) this operation's name, docstring and signature."""
        method.__name__ = self.name
        method.__qualname__ = f"{owner}.{self.name}"
        method.__doc__ = self.__doc__
        method.__signature__ = self.signature  # type: ignore[attr-defined]
        method.__annotations__ = {
            **{k: v for k, v in self.flow.__annotations__.items() if k != "self"},
            "return": self.signature.return_annotation,
        }

    def arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments by parameter name, defaults filled in (TypeError if unbound).

        The common call (known names, none given twice) is bound without
        ``inspect.Signature.bind``, which costs more than the rest of building a request;
        anything else is left to it, for its exact TypeError.
        """
        positional, defaults, names = self._binding
        if len(args) <= len(positional):
            values = dict(zip(positional, args, strict=False))
            if kwargs.keys() <= names and not values.keys() & kwargs.keys():
                values.update(kwargs)
                for name, default in defaults.items():
                    values.setdefault(name, default)
                if len(values) == len(names):
                    return values
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return bound.arguments

    @cached_property
    def _binding(self) -> tuple[tuple[str, ...], dict[str, Any], frozenset[str]]:
        """The names that may be given by position, the defaults, and every name."""
        parameters = self.signature.parameters.values()
        positional = tuple(
            p.name for p in parameters if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        )
        defaults = {p.name: p.default for p in parameters if p.default is not p.empty}
        return positional, defaults, frozenset(self.signature.parameters)

    @cached_property
    def parameter_types(self) -> dict[str, Any]:
        """Each parameter's type, resolved (for request models derived from the signature)."""
        hints = typing.get_type_hints(self.flow)
        return {name: hints[name] for name in self.signature.parameters}

    @cached_property
    def known_parameters(self) -> dict[str, type[Job] | type[Endpoint]]:
        """The parameters that take a caller's copy of the object the route names.

        A parameter typed ``Job | None`` (or ``Endpoint | None``) is such a copy (``known=``
        of the setters). It names the object of the route's path parameter; over HTTP it
        travels as its resourceVersion only (see :mod:`gridweave_clients.kuberay`).
        """
        found: dict[str, type[Job] | type[Endpoint]] = {}
        for name, annotation in self.parameter_types.items():
            for candidate in typing.get_args(annotation) or (annotation,):
                if candidate is Job or candidate is Endpoint:
                    found[name] = candidate
        return found

    @cached_property
    def result_type(self) -> Any:
        """The type the operation returns (``Job``, ``list[Job]``, ``None``...)."""
        flow_type = typing.get_type_hints(self.flow)["return"]
        return typing.get_args(flow_type)[-1]


def operation(
    route: Route | None,
) -> Callable[[Callable[Concatenate[FlowContext, _P], Flow[_T]]], Operation[_P, _T]]:
    """Declare a flow as a typed operation served at ``route`` (None: composed client-side)."""

    def declare(flow: Callable[Concatenate[FlowContext, _P], Flow[_T]]) -> Operation[_P, _T]:
        return Operation(flow, route)

    return declare


class BlockingRunner:
    """A client whose operation methods return the result: it runs each call to the end."""

    def perform_operation(
        self, operation: Operation[..., _T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> _T:
        """Run one call of ``operation``; its result or its error."""
        raise NotImplementedError

    def bind_operation(self, operation: Operation[..., Any]) -> Callable[..., Any]:
        """``operation`` as a method of this client."""
        perform = self.perform_operation

        def method(*args: Any, **kwargs: Any) -> Any:
            return perform(operation, args, kwargs)

        operation.describe(method, type(self).__name__)
        return method


class AsyncRunner:
    """A client whose operation methods are awaited."""

    async def perform_operation(
        self, operation: Operation[..., _T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> _T:
        """Run one call of ``operation``; its result or its error."""
        raise NotImplementedError

    def bind_operation(self, operation: Operation[..., Any]) -> Callable[..., Any]:
        """``operation`` as a coroutine method of this client."""
        perform = self.perform_operation

        async def method(*args: Any, **kwargs: Any) -> Any:
            return await perform(operation, args, kwargs)

        operation.describe(method, type(self).__name__)
        return method
