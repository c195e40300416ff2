"""The WireGuard mesh: key pairs, the wg-quick configurations, and the driver that applies them.

The master is the hub: every node has one peer, the master, reached at its public endpoint
with a keepalive (nodes behind NAT keep their mapping open); the master has one peer per
node, allowed the node's mesh address only. kuberay-service keeps the master's peers equal
to the node registry (:class:`MeshSync`).
"""

from __future__ import annotations

from kuberay_service.mesh.config import (
    InterfaceSection,
    PeerSection,
    WireGuardConfig,
    master_config,
    parse_config,
    render_config,
    worker_config,
)
from kuberay_service.mesh.driver import CommandRunner, MeshCommandError, WireGuardDriver
from kuberay_service.mesh.keys import KeyPair, generate_key_pair, public_key_of
from kuberay_service.mesh.sync import MeshPeer, MeshSync, peers_to_change

__all__ = [
    "CommandRunner",
    "InterfaceSection",
    "KeyPair",
    "MeshCommandError",
    "MeshPeer",
    "MeshSync",
    "PeerSection",
    "WireGuardConfig",
    "WireGuardDriver",
    "generate_key_pair",
    "master_config",
    "parse_config",
    "peers_to_change",
    "public_key_of",
    "render_config",
    "worker_config",
]
