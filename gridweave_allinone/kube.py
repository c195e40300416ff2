"""The Kubernetes API of the all-in-one: the local etcd + kube-apiserver, or an existing cluster.

Either way the namespace, the CRDs and ``k8s/rbac.yaml`` are put on it, and the two services
that talk to Kubernetes, kuberay-service and the job gateway, each get a kubeconfig of their
own ServiceAccount, so each acts with exactly the rights the RBAC manifest gives it, as it
would in a cluster.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from kubernetes.client import ApiClient

from gridweave_allinone.secrets import secrets_dir
from gridweave_allinone.settings import AllInOneSettings
from gridweave_runtime.kubeapi import (
    KubeAPIError,
    KubeAPIServer,
    api_client_for,
    apply_manifests,
    ensure_namespace,
    find_binaries,
    install_crds,
    service_account_kubeconfig,
    write_kubeconfig,
)

__all__ = [
    "GATEWAY_SERVICE_ACCOUNT",
    "KUBERAY_SERVICE_ACCOUNT",
    "MANIFESTS_DIR",
    "NAMESPACE",
    "KubeAccess",
    "start_kube",
]

MANIFESTS_DIR = Path(__file__).resolve().parents[1] / "k8s"
KUBERAY_SERVICE_ACCOUNT = "kuberay-service"
GATEWAY_SERVICE_ACCOUNT = "job-gateway"
#: The namespace ``k8s/rbac.yaml`` grants the two ServiceAccounts their rights in.
NAMESPACE = "gridweave"
_TOKEN_SECONDS = 30 * 86_400  # a new token at every start


@dataclass
class KubeAccess:
    """The cluster in use: the admin kubeconfig, kuberay-service's, the gateway's, and the
    local server."""

    admin_kubeconfig: Path
    service_kubeconfig: Path
    gateway_kubeconfig: Path
    server: KubeAPIServer | None

    @property
    def kubectl(self) -> Path | None:
        """The kubectl for it: the one built beside the local API server, else the PATH's."""
        if self.server is not None and (self.server.binaries / "kubectl").is_file():
            return self.server.binaries / "kubectl"
        found = shutil.which("kubectl")
        return None if found is None else Path(found)

    def stop(self) -> None:
        """Stop the local API (an existing cluster is left alone)."""
        if self.server is not None:
            self.server.stop()


def _crd_manifests() -> list[Path]:
    manifests = sorted(MANIFESTS_DIR.glob("*-crd.yaml"))
    if not manifests:
        raise KubeAPIError(f"no CRD manifests in {MANIFESTS_DIR}: run from a source checkout")
    return manifests


def _go_missing_message() -> str:
    return (
        "the local Kubernetes API is built from Go modules and Go is not installed: "
        "install Go 1.26 or newer (https://go.dev/dl/), or set GRIDWEAVE_KUBECONFIG to the "
        "kubeconfig of an existing cluster (k3s, kind)"
    )


def _identity(
    api_client: ApiClient, settings: AllInOneSettings, file: str, service_account: str
) -> Path:
    """A kubeconfig acting as ``service_account`` (a new TokenRequest token), written 0600 to
    the secrets as ``<file>.kubeconfig``."""
    config = service_account_kubeconfig(
        api_client,
        namespace=NAMESPACE,
        service_account=service_account,
        expiration_seconds=_TOKEN_SECONDS,
    )
    return write_kubeconfig(secrets_dir(settings.state_dir) / f"{file}.kubeconfig", config)


def start_kube(settings: AllInOneSettings, *, show_progress: bool) -> KubeAccess:
    """Start (or reach) the cluster, put Gridweave's resources on it, mint the identities of
    kuberay-service and the gateway."""
    server: KubeAPIServer | None = None
    if settings.kubeconfig is not None:
        admin = settings.kubeconfig
        with api_client_for(admin) as api_client:
            ensure_namespace(api_client, NAMESPACE)
            install_crds(api_client, _crd_manifests())
    else:
        try:
            binaries = find_binaries(show_progress=show_progress)
        except KubeAPIError as exc:
            if "Go is not installed" in str(exc):
                raise KubeAPIError(_go_missing_message()) from exc
            raise
        server = KubeAPIServer(
            settings.state_dir / "kubeapi",
            binaries=binaries,
            host=settings.client_host,
            port=settings.port("kubeapi"),
            namespaces=(NAMESPACE,),
            crd_manifests=_crd_manifests(),
        )
        server.start()
        admin = server.kubeconfig
    try:
        with api_client_for(admin) as api_client:
            apply_manifests(api_client, [MANIFESTS_DIR / "rbac.yaml"])
            service = _identity(api_client, settings, "kuberay", KUBERAY_SERVICE_ACCOUNT)
            gateway = _identity(api_client, settings, "gateway", GATEWAY_SERVICE_ACCOUNT)
    except BaseException:
        if server is not None:
            server.stop()
        raise
    return KubeAccess(admin, service, gateway, server)
