"""The RayCluster CRD of the pinned KubeRay module (``tools/kuberay-crd``) on the tests' API."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from gridweave_runtime.kubeapi import api_client_for
from gridweave_runtime.kubeapi import install_crds as _install_crds
from tests.support.kubeapi import REPO_ROOT, KubeAPI

__all__ = ["CRD_SCRIPT", "install_raycluster_crd", "raycluster"]

CRD_SCRIPT = REPO_ROOT / "tools" / "kuberay-crd" / "crd.sh"


class RayClusterCrdUnavailable(RuntimeError):
    """The pinned KubeRay module could not be had (no Go, no module proxy)."""


def raycluster_crd_manifest() -> Path:
    """The RayCluster CRD manifest from the module cache (downloaded the first time)."""
    try:
        done = subprocess.run(
            ["bash", str(CRD_SCRIPT)], capture_output=True, text=True, timeout=300, check=True
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise RayClusterCrdUnavailable(str(exc)) from exc
    return Path(done.stdout.strip())


#: The APIs (by kubeconfig) this test process installed the CRD on: once is enough.
_INSTALLED: set[Path] = set()


def install_raycluster_crd(api: KubeAPI) -> None:
    """Install the RayCluster CRD (once per API and test process) and wait until served."""
    if api.kubeconfig in _INSTALLED:
        return
    manifest = raycluster_crd_manifest()
    with api_client_for(api.kubeconfig) as api_client:
        _install_crds(api_client, [manifest])
    _INSTALLED.add(api.kubeconfig)


def raycluster(name: str, namespace: str) -> dict[str, Any]:
    """A small RayCluster: a head and a CPU worker group that is not Gridweave's."""
    container = {"name": "ray", "image": "rayproject/ray:2.49.0"}
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "rayVersion": "2.49.0",
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [container]}},
            },
            "workerGroupSpecs": [
                {
                    "groupName": "cpu",
                    "replicas": 1,
                    "minReplicas": 0,
                    "maxReplicas": 4,
                    "rayStartParams": {},
                    "template": {"spec": {"containers": [container]}},
                }
            ],
        },
    }
