"""How a client's methods are made from the flows: name, docstring and signature kept.

``CrdClient.create_job = blocking(TypedFlows.create_job)``: the method drives the flow on
the client's store. Type checkers see the flow's parameters with the flow's result as the
return type (``ParamSpec``); ``inspect.signature`` shows the same.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["describe_as"]

_FLOW_PREFIX = "Flow["


def _result_annotation(flow_annotation: Any) -> Any:
    # ``from __future__ import annotations`` keeps annotations as text: "Flow[Job]" -> "Job"
    if isinstance(flow_annotation, str) and flow_annotation.startswith(_FLOW_PREFIX):
        return flow_annotation[len(_FLOW_PREFIX) : -1]
    return flow_annotation


def describe_as(method: Callable[..., Any], operation: Callable[..., Any], owner: str) -> None:
    """Give ``method`` (of class ``owner``) the name, docstring and signature of ``operation``."""
    method.__name__ = operation.__name__
    method.__qualname__ = f"{owner}.{operation.__name__}"
    method.__doc__ = operation.__doc__
    signature = inspect.signature(operation)
    result = _result_annotation(signature.return_annotation)
    method.__signature__ = signature.replace(return_annotation=result)  # type: ignore[attr-defined]
    method.__annotations__ = {**operation.__annotations__, "return": result}
