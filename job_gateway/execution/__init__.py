"""Execution on Ray: the executor (gateway side), the worker (Ray side), the Ray connection.

Only :mod:`job_gateway.execution.worker` unpickles user data, and only inside a Ray worker
process; the gateway learns how a run ended from the JSON outcome record in the object
store (docs/architecture.md, "Execution on Ray").
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from job_gateway.execution.actors import NAMESPACE, NODE_LABEL, actor_name
    from job_gateway.execution.executor import Executor
    from job_gateway.execution.outcome import Outcome, outcome_key, parse_outcome
    from job_gateway.execution.ray_cluster import (
        LocalHead,
        connect_gateway_ray,
        connect_ray,
        ensure_local_head,
        stop_local_head,
    )
    from job_gateway.execution.settings import ExecutionSettings
    from job_gateway.execution.worker import AttemptSpec

__all__ = [
    "NAMESPACE",
    "NODE_LABEL",
    "AttemptSpec",
    "ExecutionSettings",
    "Executor",
    "LocalHead",
    "Outcome",
    "actor_name",
    "connect_gateway_ray",
    "connect_ray",
    "ensure_local_head",
    "outcome_key",
    "parse_outcome",
    "stop_local_head",
]

#: Imported on first use: a Ray worker importing :mod:`job_gateway.execution.worker` loads
#: only what the worker needs, not the executor and the controller library.
_EXPORTS = {
    "AttemptSpec": "job_gateway.execution.worker",
    "ExecutionSettings": "job_gateway.execution.settings",
    "Executor": "job_gateway.execution.executor",
    "LocalHead": "job_gateway.execution.ray_cluster",
    "NAMESPACE": "job_gateway.execution.actors",
    "NODE_LABEL": "job_gateway.execution.actors",
    "Outcome": "job_gateway.execution.outcome",
    "actor_name": "job_gateway.execution.actors",
    "connect_gateway_ray": "job_gateway.execution.ray_cluster",
    "connect_ray": "job_gateway.execution.ray_cluster",
    "ensure_local_head": "job_gateway.execution.ray_cluster",
    "outcome_key": "job_gateway.execution.outcome",
    "parse_outcome": "job_gateway.execution.outcome",
    "stop_local_head": "job_gateway.execution.ray_cluster",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
