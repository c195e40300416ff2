"""The in-memory transport: ``gridweave_controller.crd``'s functions over a :class:`MemoryStore`.

Same functions, same signatures as the direct transport (a test compares them): both bind
them to a :class:`~gridweave_controller._active.ActiveClient`, and the typed layer
(validation, phase machines, conditions, read-modify-write) is the library's own
:class:`~gridweave_controller.client.CrdClient`, so only the storage differs. Extras for
tests: :data:`STORE`, :func:`reset` and :func:`inject_conflicts`.
"""

from __future__ import annotations

import os

from gridweave_controller._active import ActiveClient
from gridweave_controller._kubeconfig import resolve_namespace
from gridweave_controller.client import CrdClient
from tests.support.memory_store import MemoryStore

#: The one in-memory "cluster" every mock client shares.
STORE = MemoryStore()


def _new_client(namespace: str | None) -> CrdClient:
    return CrdClient(STORE, resolve_namespace(namespace))


_ACTIVE: ActiveClient[CrdClient] = ActiveClient(lambda: _new_client(None))


def init_k8s_client(
    *, kubeconfig: str | os.PathLike[str] | None = None, namespace: str | None = None
) -> CrdClient:
    """Use the in-memory store in ``namespace`` (``kubeconfig`` is accepted and ignored)."""
    client = _new_client(namespace)
    _ACTIVE.install(client)
    return client


def use_client(client: CrdClient) -> None:
    """Make ``client`` the one the module functions use."""
    _ACTIVE.install(client)


def reset() -> None:
    """Empty the store and forget the active client."""
    STORE.clear()
    _ACTIVE.install(None)


def inject_conflicts(count: int) -> None:
    """Make the next ``count`` status writes fail with Conflict."""
    STORE.inject_conflicts(count)


create_job = _ACTIVE.create_job
get_job = _ACTIVE.get_job
list_jobs = _ACTIVE.list_jobs
delete_job = _ACTIVE.delete_job
set_job_allocated = _ACTIVE.set_job_allocated
set_job_running = _ACTIVE.set_job_running
set_job_completed = _ACTIVE.set_job_completed
set_job_failed = _ACTIVE.set_job_failed
set_job_cancelled = _ACTIVE.set_job_cancelled
set_job_timed_out = _ACTIVE.set_job_timed_out
set_job_pending = _ACTIVE.set_job_pending
wait_for_job = _ACTIVE.wait_for_job
create_endpoint = _ACTIVE.create_endpoint
get_endpoint = _ACTIVE.get_endpoint
list_endpoints = _ACTIVE.list_endpoints
delete_endpoint = _ACTIVE.delete_endpoint
set_endpoint_deploying = _ACTIVE.set_endpoint_deploying
set_endpoint_running = _ACTIVE.set_endpoint_running
set_endpoint_stopped = _ACTIVE.set_endpoint_stopped
set_endpoint_failed = _ACTIVE.set_endpoint_failed
set_endpoint_health = _ACTIVE.set_endpoint_health
watch_jobs = _ACTIVE.watch_jobs
watch_endpoints = _ACTIVE.watch_endpoints
