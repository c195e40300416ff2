"""The master's peers follow the node registry: :class:`MeshSync` reconciles them.

Desired: one peer per node in the registry, allowed its mesh address (/32). Running: what
``wg show`` lists. The difference is applied with ``wg set`` and saved with
``wg-quick save``, so a restarted master (or a lost command) converges on the next pass:
after a start, whenever a node validates or leaves (``request()``), and every
``period_seconds`` besides.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kuberay_service.mesh.driver import WireGuardDriver

__all__ = ["MeshPeer", "MeshSync", "peers_to_change"]

_logger = logging.getLogger("gridweave.mesh")


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


class MeshSync:
    """Keeps one interface's peers equal to ``read_peers()`` (the registry's nodes)."""

    def __init__(
        self,
        driver: WireGuardDriver,
        read_peers: Callable[[], Sequence[MeshPeer]],
        *,
        period_seconds: float = 60.0,
    ) -> None:
        self.driver = driver
        self.read_peers = read_peers
        self.period_seconds = period_seconds
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        #: Passes completed (a test waits for one after a change).
        self.passes = 0
        self._passed = threading.Condition()

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

    def request(self) -> None:
        """Run a pass soon (a node validated or left)."""
        self._wake.set()

    def wait_for_pass(self, after: int, timeout: float) -> bool:
        """Whether more than ``after`` passes completed within ``timeout`` seconds."""
        with self._passed:
            return self._passed.wait_for(lambda: self.passes > after, timeout)

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.clear()
            try:
                changed = self.sync_once()
                if any(changed):
                    _logger.info("mesh peers: %d set, %d removed", *changed)
            except Exception:  # logged and retried on the next pass: the mesh converges
                _logger.warning("mesh sync of %s failed", self.driver.interface, exc_info=True)
            with self._passed:
                self.passes += 1
                self._passed.notify_all()
            self._wake.wait(self.period_seconds)

    def start(self) -> None:
        """Sync in a thread of its own until :meth:`stop`."""
        self._thread = threading.Thread(target=self._run, name="mesh-sync", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread (after the pass under way)."""
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
            self._thread = None
