"""Where a client finds its cluster and namespace: one rule for the blocking and asyncio clients."""

from __future__ import annotations

import os

__all__ = ["DEFAULT_NAMESPACE", "NAMESPACE_ENV", "kubeconfig_file", "resolve_namespace"]

DEFAULT_NAMESPACE = "gridweave"
NAMESPACE_ENV = "KUBERAY_NAMESPACE"


def resolve_namespace(namespace: str | None) -> str:
    """``namespace``, else ``KUBERAY_NAMESPACE``, else ``gridweave``."""
    return namespace or os.environ.get(NAMESPACE_ENV) or DEFAULT_NAMESPACE


def kubeconfig_file(kubeconfig: str | os.PathLike[str] | None) -> str:
    """``kubeconfig``, else ``KUBECONFIG``, else ``~/.kube/config``.

    Read when called: the Kubernetes client library reads ``KUBECONFIG`` once, at import.
    """
    if kubeconfig is not None:
        return os.fspath(kubeconfig)
    return os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
