"""The tests' Kubernetes API: the product launcher on a throwaway directory, or a real cluster.

:mod:`gridweave_runtime.kubeapi` starts etcd + the full kube-apiserver the envtest way (the
all-in-one platform starts the same); here it runs on a temporary directory, etcd without
fsync. ``GRIDWEAVE_TEST_KUBECONFIG`` points the same tests at any real cluster instead
(kind, k3s).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from gridweave_runtime.kubeapi import (
    KubeAPIError,
    KubeAPIServer,
    api_client_for,
    ensure_namespace,
    find_binaries,
)
from gridweave_runtime.kubeapi import install_crds as _install_crds

__all__ = [
    "CRD_MANIFESTS",
    "NAMESPACE",
    "REPO_ROOT",
    "KubeAPI",
    "KubeAPIUnavailable",
    "api_client_for",
    "build_binaries",
    "install_crds",
    "kube_api",
    "kubectl_path",
    "namespace_for_test",
    "namespace_on_cluster",
    "run_local_apiserver",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
CRD_MANIFESTS = (
    REPO_ROOT / "k8s" / "gridweave-job-crd.yaml",
    REPO_ROOT / "k8s" / "gridweave-endpoint-crd.yaml",
)
#: The namespace the launcher creates (the services' default, ``KUBERAY_NAMESPACE``).
NAMESPACE = "gridweave"

#: What the tests catch when the real apiserver cannot be had (then fail or skip).
KubeAPIUnavailable = KubeAPIError


@dataclass(frozen=True)
class KubeAPI:
    """A reachable Kubernetes API: its admin kubeconfig and whether we started it."""

    kubeconfig: Path
    started_here: bool


def build_binaries() -> Path:
    """Build (or find in the cache) etcd, kube-apiserver and kubectl; return their directory."""
    return find_binaries(REPO_ROOT / "tools" / "kubeapi" / "build.sh")


def kubectl_path() -> Path:
    """The pinned kubectl built beside the apiserver (never a system kubectl)."""
    path = build_binaries() / "kubectl"
    if not path.exists():
        raise KubeAPIUnavailable(f"no kubectl in {path.parent}")
    return path


@contextmanager
def run_local_apiserver(workdir: Path | None = None) -> Iterator[KubeAPI]:
    """Start etcd + apiserver on a temporary directory (namespace ``gridweave`` created)."""
    binaries = build_binaries()
    with tempfile.TemporaryDirectory(prefix="gridweave-kubeapi-", dir=workdir) as tmp:
        with KubeAPIServer(Path(tmp), binaries=binaries, durable=False) as server:
            yield KubeAPI(kubeconfig=server.kubeconfig, started_here=True)


def install_crds(kubeconfig: Path, timeout_s: float = 60.0) -> None:
    """Create (or replace) the Gridweave CRDs and wait until they are Established."""
    with api_client_for(kubeconfig) as api_client:
        _install_crds(api_client, CRD_MANIFESTS, timeout_s=timeout_s)


@contextmanager
def kube_api() -> Iterator[KubeAPI]:
    """A Kubernetes API with the Gridweave CRDs installed: external if configured, else local."""
    external = os.environ.get("GRIDWEAVE_TEST_KUBECONFIG")
    if external:
        api = KubeAPI(kubeconfig=Path(external), started_here=False)
        with api_client_for(api.kubeconfig) as api_client:
            ensure_namespace(api_client, NAMESPACE)
            _install_crds(api_client, CRD_MANIFESTS)
        yield api
        return
    binaries = build_binaries()
    with tempfile.TemporaryDirectory(prefix="gridweave-kubeapi-") as tmp:
        server = KubeAPIServer(
            Path(tmp), binaries=binaries, durable=False, crd_manifests=CRD_MANIFESTS
        )
        with server:
            yield KubeAPI(kubeconfig=server.kubeconfig, started_here=True)


@contextmanager
def namespace_on_cluster(kubeconfig: Path, name: str, *, delete: bool = True) -> Iterator[None]:
    """Create the Namespace ``name`` for the duration of the block.

    ``delete=False`` leaves it: on the local API, with no namespace controller, a deleted
    namespace only turns Terminating (its objects stay), so deleting buys nothing there.
    """
    from kubernetes import client

    with api_client_for(kubeconfig) as api_client:
        ensure_namespace(api_client, name)
        try:
            yield
        finally:
            if delete:
                client.CoreV1Api(api_client).delete_namespace(name)


def namespace_for_test(api: KubeAPI, name: str) -> AbstractContextManager[None]:
    """The Namespace a test's objects live in: created, and deleted only on a real cluster."""
    return namespace_on_cluster(api.kubeconfig, name, delete=not api.started_here)
