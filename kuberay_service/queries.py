"""Query helpers of the node registry: they read, lock and flush; the services commit."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from kuberay_service.models import JoinKeyModel, NodeModel

__all__ = [
    "delete_node",
    "find_join_key",
    "find_join_key_by_hash",
    "find_node",
    "find_node_by_public_key",
    "find_node_by_token_hash",
    "list_join_keys",
    "list_nodes",
    "used_vpn_ips",
]


def find_join_key_by_hash(session: Session, key_hash: str) -> JoinKeyModel | None:
    """The join key with this hash, locked until the transaction ends (its uses change)."""
    query = select(JoinKeyModel).where(JoinKeyModel.key_hash == key_hash).with_for_update()
    return session.scalars(query).one_or_none()


def find_join_key(session: Session, key_id: str) -> JoinKeyModel | None:
    """The join key ``key_id``, locked until the transaction ends."""
    query = select(JoinKeyModel).where(JoinKeyModel.id == key_id).with_for_update()
    return session.scalars(query).one_or_none()


def list_join_keys(session: Session) -> Sequence[JoinKeyModel]:
    """Every join key, newest first."""
    query = select(JoinKeyModel).order_by(JoinKeyModel.created_at.desc(), JoinKeyModel.id)
    return session.scalars(query).all()


def find_node(session: Session, name: str) -> NodeModel | None:
    """The node ``name``, locked until the transaction ends."""
    return session.scalars(
        select(NodeModel).where(NodeModel.name == name).with_for_update()
    ).one_or_none()


def find_node_by_token_hash(session: Session, token_hash: str) -> NodeModel | None:
    """The node whose token has this hash, locked until the transaction ends."""
    return session.scalars(
        select(NodeModel).where(NodeModel.token_hash == token_hash).with_for_update()
    ).one_or_none()


def find_node_by_public_key(session: Session, public_key: str) -> NodeModel | None:
    """The node holding this WireGuard public key, if any."""
    query = select(NodeModel).where(NodeModel.wireguard_public_key == public_key)
    return session.scalars(query).one_or_none()


def used_vpn_ips(session: Session) -> set[str]:
    """Every mesh address a node holds now (committed, as this statement sees them)."""
    return set(session.scalars(select(NodeModel.vpn_ip)).all())


def list_nodes(session: Session) -> Sequence[NodeModel]:
    """Every node, by name."""
    return session.scalars(select(NodeModel).order_by(NodeModel.name)).all()


def delete_node(session: Session, name: str) -> None:
    """Remove the node ``name`` (its address and token go with the row)."""
    session.execute(delete(NodeModel).where(NodeModel.name == name))
    session.flush()
