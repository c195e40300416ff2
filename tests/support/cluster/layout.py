"""The test cluster's addresses: one LAN, one mesh, the master and the nodes on both."""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network

__all__ = ["Layout"]


@dataclass(frozen=True)
class Layout:
    """The LAN every machine is wired to (a bridge in a namespace of its own) and the
    WireGuard mesh kuberay-service hands addresses of. Each cluster has its own namespaces,
    so two clusters at once may use the same addresses."""

    lan: IPv4Network = IPv4Network("192.168.77.0/24")
    mesh: IPv4Network = IPv4Network("10.88.0.0/16")
    wireguard_port: int = 51820

    @property
    def master_lan_ip(self) -> str:
        return str(self.lan[1])

    @property
    def master_vpn_ip(self) -> str:
        return str(self.mesh[1])

    def node_lan_ip(self, number: int) -> str:
        """The LAN address of node ``number`` (1, 2, ...)."""
        return str(self.lan[10 + number])
