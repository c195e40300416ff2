"""What follows the node registry outside the database, built from the settings.

- the master's WireGuard peers (:class:`~kuberay_service.mesh.MeshSync`), when
  ``KUBERAY_WIREGUARD_INTERFACE`` is set;
- the RayCluster's worker groups (:class:`~kuberay_service.ray.RayWorkerSync`), when
  ``KUBERAY_RAY_CLUSTER`` is set.

Both are reconcilers: started when the app serves, asked for a pass after each join and
leave, stopped at shutdown.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubernetes import client as k8s_client

from gridweave_clients.nodes import NodeResponse
from gridweave_controller.kube_api import load_api_client
from gridweave_runtime.database import Database
from kuberay_service.mesh import CommandRunner, MeshPeer, MeshSync, WireGuardDriver
from kuberay_service.mesh.driver import run_command
from kuberay_service.ray import RayClusterGroups, RayWorkerSync
from kuberay_service.reconciler import Reconciler
from kuberay_service.services.nodes import joined_nodes, mesh_peers
from kuberay_service.settings import KubeRaySettings

__all__ = ["NodeSync", "build_node_sync"]


@dataclass
class NodeSync:
    """The reconcilers of one app and what they hold open."""

    mesh: MeshSync | None = None
    ray: RayWorkerSync | None = None
    api_client: k8s_client.ApiClient | None = field(default=None, repr=False)

    @property
    def reconcilers(self) -> list[Reconciler]:
        """The ones configured."""
        return [r for r in (self.mesh, self.ray) if r is not None]

    def start(self) -> None:
        """Start every reconciler (each runs a first pass at once)."""
        for reconciler in self.reconcilers:
            reconciler.start()

    def stop(self) -> None:
        """Stop them and close the Kubernetes connection."""
        for reconciler in self.reconcilers:
            reconciler.stop()
        if self.api_client is not None:
            self.api_client.close()  # type: ignore[no-untyped-call]


def build_node_sync(
    settings: KubeRaySettings, database: Database | None, *, mesh_runner: CommandRunner | None
) -> NodeSync:
    """The reconcilers the settings ask for (none without the registry's database)."""
    sync = NodeSync()
    if database is None:
        return sync
    period = settings.mesh_sync_period_seconds
    if settings.wireguard_interface is not None:
        driver = WireGuardDriver(settings.wireguard_interface, runner=mesh_runner or run_command)

        def read_peers() -> list[MeshPeer]:
            with database.session() as session:
                return mesh_peers(session)

        sync.mesh = MeshSync(driver, read_peers, period_seconds=period)
    if settings.ray_cluster is not None:
        sync.api_client = load_api_client(settings.kubeconfig)
        groups = RayClusterGroups(
            sync.api_client, namespace=settings.namespace, name=settings.ray_cluster
        )

        def read_joined() -> list[NodeResponse]:
            with database.session() as session:
                return joined_nodes(session, settings=settings)

        sync.ray = RayWorkerSync(
            groups, read_joined, image=settings.ray_worker_image, period_seconds=period
        )
    return sync
