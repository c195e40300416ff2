"""GridweaveJob and GridweaveEndpoint as plain functions: ``from gridweave_controller import crd``.

The functions act on one module-level :class:`~gridweave_controller.client.CrdClient`
(the transport seam): :func:`init_k8s_client` installs one over the Kubernetes API,
:func:`use_client` installs any other (an in-memory store in tests, another cluster).
The first call without either initializes from the environment. The operations are the
bound methods of one :class:`~gridweave_controller._active.ActiveClient`. Every transport
(this one, the proxied ``job_gateway.crd_client`` and ``tests.mock_crd``) exposes exactly
these functions with exactly these signatures: the others take them, for type checkers,
from this module's ``__all__`` (the operations and watches; :func:`init_k8s_client` and
:func:`use_client` configure this transport and are not in it), so a new operation is bound
by one line here.
"""

from __future__ import annotations

import os

from gridweave_controller._active import ActiveClient
from gridweave_controller._kube_store import KubeStore
from gridweave_controller._kubeconfig import resolve_namespace
from gridweave_controller.client import CrdClient
from gridweave_controller.kube_api import load_api_client

__all__ = [
    "create_endpoint",
    "create_job",
    "delete_endpoint",
    "delete_job",
    "get_endpoint",
    "get_job",
    "list_endpoints",
    "list_jobs",
    "set_endpoint_deploying",
    "set_endpoint_failed",
    "set_endpoint_health",
    "set_endpoint_pending",
    "set_endpoint_running",
    "set_endpoint_stopped",
    "set_endpoint_waiting",
    "set_job_allocated",
    "set_job_cancelled",
    "set_job_completed",
    "set_job_failed",
    "set_job_hold_released",
    "set_job_pending",
    "set_job_running",
    "set_job_timed_out",
    "set_job_usage_reported",
    "wait_for_job",
    "watch_endpoints",
    "watch_jobs",
]


def _new_client(kubeconfig: str | os.PathLike[str] | None, namespace: str | None) -> CrdClient:
    return CrdClient(KubeStore(load_api_client(kubeconfig)), resolve_namespace(namespace))


def _close_replaced(previous: CrdClient) -> None:
    if isinstance(previous.store, KubeStore):
        previous.store.close()


_ACTIVE: ActiveClient[CrdClient] = ActiveClient(
    lambda: _new_client(None, None), on_replaced=_close_replaced
)


def init_k8s_client(
    *, kubeconfig: str | os.PathLike[str] | None = None, namespace: str | None = None
) -> CrdClient:
    """Connect: in-cluster config, else ``kubeconfig`` / ``KUBECONFIG`` / ``~/.kube/config``.

    The namespace is ``namespace``, else ``KUBERAY_NAMESPACE``, else ``gridweave``.
    """
    client = _new_client(kubeconfig, namespace)
    _ACTIVE.install(client)
    return client


def use_client(client: CrdClient) -> None:
    """Make ``client`` the one the module functions use (any store, any namespace)."""
    _ACTIVE.install(client)


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
set_job_usage_reported = _ACTIVE.set_job_usage_reported
set_job_hold_released = _ACTIVE.set_job_hold_released
wait_for_job = _ACTIVE.wait_for_job
create_endpoint = _ACTIVE.create_endpoint
get_endpoint = _ACTIVE.get_endpoint
list_endpoints = _ACTIVE.list_endpoints
delete_endpoint = _ACTIVE.delete_endpoint
set_endpoint_deploying = _ACTIVE.set_endpoint_deploying
set_endpoint_running = _ACTIVE.set_endpoint_running
set_endpoint_stopped = _ACTIVE.set_endpoint_stopped
set_endpoint_failed = _ACTIVE.set_endpoint_failed
set_endpoint_pending = _ACTIVE.set_endpoint_pending
set_endpoint_health = _ACTIVE.set_endpoint_health
set_endpoint_waiting = _ACTIVE.set_endpoint_waiting
watch_jobs = _ACTIVE.watch_jobs
watch_endpoints = _ACTIVE.watch_endpoints
