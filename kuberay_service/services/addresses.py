"""The mesh's address pool: each node gets one address of ``KUBERAY_MESH_CIDR``.

The database decides: ``nodes.vpn_ip`` is UNIQUE, so two validations racing for the same
free address cannot both keep it. The allocator picks the lowest address no committed node
holds and inserts; when the constraint refuses it (another validation took it meanwhile),
it reads the pool again and tries the next one.
"""

from __future__ import annotations

from collections.abc import Callable
from ipaddress import IPv4Address, IPv4Network

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from kuberay_service import queries
from kuberay_service.errors import NodeConflict, VpnPoolExhausted
from kuberay_service.models import NodeModel

__all__ = ["free_address", "insert_with_free_address"]

#: Attempts before giving up on a pool that keeps being taken under our feet.
_MAX_ATTEMPTS = 64


def free_address(pool: IPv4Network, reserved: IPv4Address, used: set[str]) -> str | None:
    """The lowest host address of ``pool`` that is neither ``reserved`` nor ``used``."""
    for host in pool.hosts():
        if host != reserved and str(host) not in used:
            return str(host)
    return None


def insert_with_free_address(
    session: Session,
    node: NodeModel,
    *,
    pool: IPv4Network,
    reserved: IPv4Address,
    is_address_clash: Callable[[IntegrityError], bool],
) -> None:
    """Give ``node`` a free address of ``pool`` and insert it (flushed, not committed).

    Raises:
        VpnPoolExhausted: every address is held.
        NodeConflict: the free addresses kept being taken by racing validations.
        IntegrityError: another constraint than the address's refused the row.
    """
    for _ in range(_MAX_ATTEMPTS):
        address = free_address(pool, reserved, queries.used_vpn_ips(session))
        if address is None:
            holders = pool.num_addresses - 3  # the network, the broadcast and the master's
            raise VpnPoolExhausted(
                f"the VPN address pool {pool} has no free address: {holders} nodes hold all "
                "of them; remove a node (DELETE /v1/nodes/{name}) or widen KUBERAY_MESH_CIDR",
                pool=str(pool),
            )
        node.vpn_ip = address
        try:
            # the savepoint's flush waits for a racing transaction holding the same address
            with session.begin_nested():
                session.add(node)
        except IntegrityError as exc:  # the savepoint is rolled back, ``node`` transient again
            if not is_address_clash(exc):
                raise
            continue
        return
    raise NodeConflict(
        f"the VPN address pool {pool} is busy: every free address was taken meanwhile; try again",
        pool=str(pool),
    )
