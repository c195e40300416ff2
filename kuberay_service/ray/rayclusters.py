"""The RayCluster custom resource (``ray.io/v1``), read and written through the official
client: its worker groups follow the registry's joined nodes (:class:`RayWorkerSync`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kubernetes import client as k8s_client
from kubernetes.client.exceptions import ApiException

from gridweave_clients.nodes import NodeResponse
from kuberay_service.ray.worker_groups import desired_worker_groups
from kuberay_service.reconciler import Reconciler

__all__ = ["RayClusterGroups", "RayWorkerSync"]

GROUP, VERSION, PLURAL = "ray.io", "v1", "rayclusters"
_CONFLICT_ATTEMPTS = 5


class RayClusterGroups:
    """The worker groups of one RayCluster."""

    def __init__(self, api_client: k8s_client.ApiClient, *, namespace: str, name: str) -> None:
        self.api = k8s_client.CustomObjectsApi(api_client)
        self.namespace = namespace
        self.name = name

    def read(self) -> dict[str, Any]:
        """The RayCluster object as the apiserver has it."""
        found = self.api.get_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, self.name
        )
        assert isinstance(found, dict)
        return found

    def update(
        self, change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Replace the worker groups with ``change(current)``: (before, after).

        A read-modify-write carrying ``resourceVersion``: a concurrent writer (the KubeRay
        operator, an admin) makes it read again, never overwrites them.
        """
        for attempt in range(_CONFLICT_ATTEMPTS):
            cluster = self.read()
            before = list(cluster.get("spec", {}).get("workerGroupSpecs") or [])
            after = change(before)
            if after == before:
                return before, after
            cluster["spec"]["workerGroupSpecs"] = after
            try:
                self.api.replace_namespaced_custom_object(
                    GROUP, VERSION, self.namespace, PLURAL, self.name, cluster
                )
            except ApiException as exc:
                if exc.status != 409 or attempt == _CONFLICT_ATTEMPTS - 1:
                    raise
                continue
            return before, after
        raise AssertionError("unreachable")


def _names(groups: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {str(group.get("groupName")): group for group in groups}


class RayWorkerSync(Reconciler):
    """Keeps the RayCluster's ``gw-`` worker groups equal to the joined nodes."""

    name = "ray-worker-sync"

    def __init__(
        self,
        groups: RayClusterGroups,
        read_joined: Callable[[], Sequence[NodeResponse]],
        *,
        image: str,
        period_seconds: float = 60.0,
    ) -> None:
        super().__init__(period_seconds=period_seconds)
        self.groups = groups
        self.read_joined = read_joined
        self.image = image

    def sync_once(self) -> tuple[int, int]:
        """One pass: (groups added or changed, groups removed)."""
        joined = self.read_joined()
        before, after = self.groups.update(
            lambda current: desired_worker_groups(current, joined, image=self.image)
        )
        old, new = _names(before), _names(after)
        changed = sum(1 for name, group in new.items() if old.get(name) != group)
        return changed, sum(1 for name in old if name not in new)
