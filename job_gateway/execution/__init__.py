"""Execution on Ray: the executor (gateway side), the worker (Ray side), the Ray connection.

Only :mod:`job_gateway.execution.worker` unpickles user data, and only inside a Ray worker
process; the gateway learns how a run ended from the JSON outcome record in the object
store (docs/architecture.md, "Execution on Ray").
"""

from __future__ import annotations

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
