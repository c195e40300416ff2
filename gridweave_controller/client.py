"""The blocking typed client: the flows of :mod:`gridweave_controller._flows` on a RawStore.

:mod:`gridweave_controller.crd` exposes one :class:`CrdClient` as module-level functions;
:class:`~gridweave_controller.aio.AsyncCrdClient` drives the very same flows under asyncio.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Concatenate, ParamSpec, TypeVar

from gridweave_controller._facade import describe_as
from gridweave_controller._flows import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_SECONDS,
    MAX_WRITE_ATTEMPTS,
    Flow,
    TypedFlows,
    poll_job_until,
    run_flow,
    utc_now,
)
from gridweave_controller.store import RawStore

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT_SECONDS",
    "MAX_WRITE_ATTEMPTS",
    "CrdClient",
    "poll_job_until",
]

_P = ParamSpec("_P")
_T = TypeVar("_T")


def _blocking(
    operation: Callable[Concatenate[TypedFlows, _P], Flow[_T]],
) -> Callable[Concatenate[CrdClient, _P], _T]:
    def method(self: CrdClient, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        return run_flow(operation(self.flows, *args, **kwargs), self.store, self._sleep)

    describe_as(method, operation, "CrdClient")
    return method


class CrdClient:
    """Typed GridweaveJob and GridweaveEndpoint operations in one namespace of one store."""

    def __init__(
        self,
        store: RawStore,
        namespace: str,
        *,
        clock: Callable[[], datetime] = utc_now,
        sleep: Callable[[float], None] = time.sleep,
        max_write_attempts: int = MAX_WRITE_ATTEMPTS,
    ) -> None:
        self.store = store
        self.flows = TypedFlows(namespace, clock=clock, max_write_attempts=max_write_attempts)
        self._sleep = sleep

    @property
    def namespace(self) -> str:
        """The namespace every operation acts in."""
        return self.flows.namespace

    create_job = _blocking(TypedFlows.create_job)
    get_job = _blocking(TypedFlows.get_job)
    list_jobs = _blocking(TypedFlows.list_jobs)
    delete_job = _blocking(TypedFlows.delete_job)
    set_job_allocated = _blocking(TypedFlows.set_job_allocated)
    set_job_running = _blocking(TypedFlows.set_job_running)
    set_job_completed = _blocking(TypedFlows.set_job_completed)
    set_job_failed = _blocking(TypedFlows.set_job_failed)
    set_job_cancelled = _blocking(TypedFlows.set_job_cancelled)
    set_job_timed_out = _blocking(TypedFlows.set_job_timed_out)
    set_job_pending = _blocking(TypedFlows.set_job_pending)
    wait_for_job = _blocking(TypedFlows.wait_for_job)
    create_endpoint = _blocking(TypedFlows.create_endpoint)
    get_endpoint = _blocking(TypedFlows.get_endpoint)
    list_endpoints = _blocking(TypedFlows.list_endpoints)
    delete_endpoint = _blocking(TypedFlows.delete_endpoint)
    set_endpoint_deploying = _blocking(TypedFlows.set_endpoint_deploying)
    set_endpoint_running = _blocking(TypedFlows.set_endpoint_running)
    set_endpoint_stopped = _blocking(TypedFlows.set_endpoint_stopped)
    set_endpoint_failed = _blocking(TypedFlows.set_endpoint_failed)
    set_endpoint_health = _blocking(TypedFlows.set_endpoint_health)
