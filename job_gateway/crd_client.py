"""The controller API over HTTP: a drop-in for ``gridweave_controller.crd``.

The job gateway has no cluster access; kuberay-service re-exports the typed operations at
``/v1/crd``. Swap the import and the calls, return types and exceptions stay the same::

    from job_gateway import crd_client as crd
    crd.init_k8s_client()          # KUBERAY_URL + GRIDWEAVE_SERVICE_TOKEN
    job = crd.get_job("job-1")

The module functions are the operations of one :class:`ProxiedClient`; each call becomes
the request its declaration names (:mod:`gridweave_clients.kuberay`).

Retries: a call that was not sent is retried; a read also after a dropped connection; a
write is sent once (:class:`~gridweave_clients.kuberay.CrdRetryPolicy` says why).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from gridweave_clients.kuberay import (
    DEFAULT_URL,
    TOKEN_ENV,
    URL_ENV,
    AsyncProxiedClient,
    ProxiedClient,
)
from gridweave_controller.errors import Invalid
from gridweave_controller.operations import FUNCTION_NAMES

__all__ = [
    "DEFAULT_URL",
    "TOKEN_ENV",
    "URL_ENV",
    "AsyncProxiedClient",
    "ProxiedClient",
    "close",
    "connect",
    "init_k8s_client",
]

#: The one client the module-level functions use (it connects from the environment on
#: first use unless :func:`connect` was called).
_PROXY = ProxiedClient()


def init_k8s_client(
    *, kubeconfig: str | os.PathLike[str] | None = None, namespace: str | None = None
) -> ProxiedClient:
    """Connect to kuberay-service at ``KUBERAY_URL`` with ``GRIDWEAVE_SERVICE_TOKEN``.

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


if TYPE_CHECKING:
    # The operations and watches: ``crd``'s functions, whose signatures this module's share
    # (module ``__getattr__`` below binds them to this module's client). A test compares them.
    from gridweave_controller.crd import *  # noqa: F403


def __getattr__(name: str) -> Any:
    """An operation or watch of this module's client, bound on first use."""
    if name not in FUNCTION_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    function = getattr(_PROXY, name)
    globals()[name] = function  # found directly from now on
    return function
