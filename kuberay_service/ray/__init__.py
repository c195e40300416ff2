"""The Ray side of a joined node: its worker group in the RayCluster custom resource."""

from __future__ import annotations

from kuberay_service.ray.rayclusters import RayClusterGroups, RayWorkerSync
from kuberay_service.ray.worker_groups import (
    GROUP_PREFIX,
    NODE_LABEL,
    desired_worker_groups,
    group_name,
    worker_group,
)

__all__ = [
    "GROUP_PREFIX",
    "NODE_LABEL",
    "RayClusterGroups",
    "RayWorkerSync",
    "desired_worker_groups",
    "group_name",
    "worker_group",
]
