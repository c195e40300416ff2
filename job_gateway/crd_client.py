"""The controller API over HTTP: a drop-in for ``gridweave_controller.crd``.

The job gateway has no cluster access; kuberay-service re-exports the typed operations at
``/v1/crd``. Swap the import and the calls, return types and exceptions stay the same::

    from job_gateway import crd_client as crd
    crd.init_k8s_client()          # KUBERAY_URL + GRIDWEAVE_INTERNAL_TOKEN
    job = crd.get_job("job-1")

The module functions are the operations of one :class:`ProxiedClient`; each call becomes
the request its declaration names (:mod:`gridweave_clients.kuberay`).

Retries: a call that was not sent is retried; a read also after a dropped connection; a
write is sent once (:class:`~gridweave_clients.kuberay.CrdRetryPolicy` says why).
"""

from __future__ import annotations

import os

from gridweave_clients.kuberay import (
    DEFAULT_URL,
    TOKEN_ENV,
    URL_ENV,
    AsyncProxiedClient,
    ProxiedClient,
)
from gridweave_controller.errors import Invalid

__all__ = [
    "DEFAULT_URL",
    "TOKEN_ENV",
    "URL_ENV",
    "AsyncProxiedClient",
    "ProxiedClient",
    "close",
    "connect",
    "create_endpoint",
    "create_job",
    "delete_endpoint",
    "delete_job",
    "get_endpoint",
    "get_job",
    "init_k8s_client",
    "list_endpoints",
    "list_jobs",
    "set_endpoint_deploying",
    "set_endpoint_failed",
    "set_endpoint_health",
    "set_endpoint_running",
    "set_endpoint_stopped",
    "set_job_allocated",
    "set_job_cancelled",
    "set_job_completed",
    "set_job_failed",
    "set_job_pending",
    "set_job_running",
    "set_job_timed_out",
    "wait_for_job",
    "watch_endpoints",
    "watch_jobs",
]

#: The one client the module-level functions use (it connects from the environment on
#: first use unless :func:`connect` was called).
_PROXY = ProxiedClient()


def init_k8s_client(
    *, kubeconfig: str | os.PathLike[str] | None = None, namespace: str | None = None
) -> ProxiedClient:
    """Connect to kuberay-service at ``KUBERAY_URL`` with ``GRIDWEAVE_INTERNAL_TOKEN``.

    kuberay-service owns the cluster connection and the namespace, so ``kubeconfig`` and
    ``namespace`` (kept for a drop-in signature) must be left unset here.
    """
    if kubeconfig is not None or namespace is not None:
        raise Invalid(
            "the proxied transport takes its cluster and namespace from kuberay-service",
            field="kubeconfig" if kubeconfig is not None else "namespace",
        )
    _PROXY.connect_from_environment()
    return _PROXY


connect = _PROXY.connect
close = _PROXY.close
create_job = _PROXY.create_job
get_job = _PROXY.get_job
list_jobs = _PROXY.list_jobs
delete_job = _PROXY.delete_job
set_job_allocated = _PROXY.set_job_allocated
set_job_running = _PROXY.set_job_running
set_job_completed = _PROXY.set_job_completed
set_job_failed = _PROXY.set_job_failed
set_job_cancelled = _PROXY.set_job_cancelled
set_job_timed_out = _PROXY.set_job_timed_out
set_job_pending = _PROXY.set_job_pending
wait_for_job = _PROXY.wait_for_job
create_endpoint = _PROXY.create_endpoint
get_endpoint = _PROXY.get_endpoint
list_endpoints = _PROXY.list_endpoints
delete_endpoint = _PROXY.delete_endpoint
set_endpoint_deploying = _PROXY.set_endpoint_deploying
set_endpoint_running = _PROXY.set_endpoint_running
set_endpoint_stopped = _PROXY.set_endpoint_stopped
set_endpoint_failed = _PROXY.set_endpoint_failed
set_endpoint_health = _PROXY.set_endpoint_health
watch_jobs = _PROXY.watch_jobs
watch_endpoints = _PROXY.watch_endpoints
