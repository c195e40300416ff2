"""Every typed operation of the controller library, declared once.

:class:`Operations` holds them (``_job_operations``, ``_endpoint_operations``); a client is
``Operations`` plus a runner (:mod:`gridweave_controller._operation`). :data:`OPERATIONS`
lists them in declaration order, for what is derived from them at run time:
kuberay-service's ``/v1/crd`` routes, the proxied clients' requests, the parity tests.
"""

from __future__ import annotations

from typing import Any

from gridweave_controller._endpoint_operations import EndpointOperations
from gridweave_controller._job_operations import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_SECONDS,
    JobOperations,
)
from gridweave_controller._operation import (
    BATCH_PATH,
    CRD_PREFIX,
    MAX_BATCH_CALLS,
    AsyncRunner,
    BlockingRunner,
    Operation,
    Route,
)
from gridweave_controller._watch_methods import AsyncWatchMethods, WatchMethods

__all__ = [
    "BATCH_PATH",
    "BATCHABLE",
    "CRD_PREFIX",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT_SECONDS",
    "FUNCTION_NAMES",
    "MAX_BATCH_CALLS",
    "OPERATIONS",
    "AsyncClientBase",
    "AsyncRunner",
    "BlockingClientBase",
    "BlockingRunner",
    "Operation",
    "Operations",
    "Route",
]


class Operations(JobOperations, EndpointOperations):
    """Every typed operation; a client inherits them beside a runner."""


class BlockingClientBase(Operations, BlockingRunner, WatchMethods):
    """A blocking client: every operation run to the end, and the watches."""


class AsyncClientBase(Operations, AsyncRunner, AsyncWatchMethods):
    """An asyncio client: every operation awaited, and the async watches."""


#: Every operation, jobs first, in declaration order.
OPERATIONS: tuple[Operation[..., Any], ...] = tuple(
    member
    for declared in (JobOperations, EndpointOperations)
    for member in vars(declared).values()
    if isinstance(member, Operation)
)
#: What every module of functions (``crd``, ``crd_client``, ``mock_crd``) offers: the
#: operations and the two watches.
FUNCTION_NAMES: frozenset[str] = frozenset(
    [operation.name for operation in OPERATIONS] + ["watch_jobs", "watch_endpoints"]
)
#: The operations a batch may carry, by name: the routed writes (reads travel alone, so
#: each is retried on its own).
BATCHABLE: dict[str, Operation[..., Any]] = {
    operation.name: operation
    for operation in OPERATIONS
    if operation.route is not None and operation.route.method != "GET"
}
