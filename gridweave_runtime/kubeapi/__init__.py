"""The local Kubernetes API: etcd + the full kube-apiserver, started the envtest way.

The tests and the all-in-one platform start the same API (``docs/testing.md``)::

    from gridweave_runtime.kubeapi import KubeAPIServer, find_binaries

    with KubeAPIServer(state_dir, binaries=find_binaries(), crd_manifests=manifests) as api:
        ...  # api.kubeconfig is an admin kubeconfig; kubectl works against it

The binaries are built by ``tools/kubeapi/build.sh`` (pinned Go modules, cached outside
the repository) unless ``GRIDWEAVE_KUBEAPI_BIN`` names a directory that has them.
"""

from __future__ import annotations

from gridweave_runtime.kubeapi.errors import KubeAPIError
from gridweave_runtime.kubeapi.kubeconfig import (
    kubeconfig_for_certificate,
    kubeconfig_for_token,
    write_kubeconfig,
)
from gridweave_runtime.kubeapi.launcher import (
    BIN_ENV,
    SERVICE_ACCOUNT_ISSUER,
    KubeAPIServer,
    find_binaries,
    free_port,
)
from gridweave_runtime.kubeapi.pki import ADMIN_GROUP, ADMIN_USER, Pki, ensure_pki
from gridweave_runtime.kubeapi.resources import (
    api_client_for,
    apply_manifests,
    ensure_namespace,
    install_crds,
    service_account_kubeconfig,
)

__all__ = [
    "ADMIN_GROUP",
    "ADMIN_USER",
    "BIN_ENV",
    "SERVICE_ACCOUNT_ISSUER",
    "KubeAPIError",
    "KubeAPIServer",
    "Pki",
    "api_client_for",
    "apply_manifests",
    "ensure_namespace",
    "ensure_pki",
    "find_binaries",
    "free_port",
    "install_crds",
    "kubeconfig_for_certificate",
    "kubeconfig_for_token",
    "service_account_kubeconfig",
    "write_kubeconfig",
]
