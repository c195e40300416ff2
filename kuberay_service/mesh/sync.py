"""The master's peers follow the node registry: :class:`MeshSync` reconciles them.

Desired: one peer per node in the registry, allowed its mesh address (/32). Running: what
``wg show`` lists. The difference is applied with ``wg set`` and saved with
``wg-quick save`` (:class:`~kuberay_service.reconciler.Reconciler` runs the passes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kuberay_service.mesh.driver import WireGuardDriver
from kuberay_service.reconciler import Reconciler

__all__ = ["MeshPeer", "MeshSync", "peers_to_change"]


@dataclass(frozen=True)
class MeshPeer:
    """A node as the master's WireGuard sees it."""

    name: str
    public_key: str
    vpn_ip: str

    @property
    def allowed_ips(self) -> tuple[str, ...]:
        """What the node may send from: its own address only."""
        return (f"{self.vpn_ip}/32",)


def peers_to_change(
    running: Mapping[str, tuple[str, ...]], desired: Sequence[MeshPeer]
) -> tuple[list[MeshPeer], list[str]]:
    """(peers to set, public keys to remove) to turn ``running`` into ``desired``."""
    wanted = {peer.public_key: peer for peer in desired}
    to_set = [
        peer
        for key, peer in sorted(wanted.items())
        if tuple(sorted(running.get(key, ()))) != peer.allowed_ips
    ]
    to_remove = sorted(key for key in running if key not in wanted)
    return to_set, to_remove


class MeshSync(Reconciler):
    """Keeps one interface's peers equal to ``read_peers()`` (the registry's nodes)."""

    name = "mesh-sync"

    def __init__(
        self,
        driver: WireGuardDriver,
        read_peers: Callable[[], Sequence[MeshPeer]],
        *,
        period_seconds: float = 60.0,
    ) -> None:
        super().__init__(period_seconds=period_seconds)
        self.driver = driver
        self.read_peers = read_peers

    def sync_once(self) -> tuple[int, int]:
        """One pass: (peers set, peers removed); saved when anything changed."""
        to_set, to_remove = peers_to_change(self.driver.peers(), self.read_peers())
        for peer in to_set:
            self.driver.set_peer(peer.public_key, peer.allowed_ips)
        for public_key in to_remove:
            self.driver.remove_peer(public_key)
        if to_set or to_remove:
            self.driver.save()
        return len(to_set), len(to_remove)
