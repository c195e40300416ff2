"""Nodes: validate (join key -> mesh address and join settings), register, heartbeats, leave.

A node is ``Ready`` while it has registered and its last heartbeat is younger than
``KUBERAY_HEARTBEAT_TIMEOUT_SECONDS``; otherwise ``NotReady``. The rule is applied when the
registry is read (:func:`node_readiness`), so no background task has to flip it and every
reader sees the same answer. The gateway's inventory reads ``GET /v1/nodes``: a NotReady or
removed node takes no new work, and the gateway requeues the jobs it held.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gridweave_clients.nodes import NodeListResponse, NodeReadiness, NodeResponse
from gridweave_runtime.errors import InvalidRequest
from kuberay_service import queries
from kuberay_service.errors import (
    MeshNotConfigured,
    NodeConflict,
    NodeNotFound,
    NodeNotRegistered,
    UnknownNodeToken,
)
from kuberay_service.mesh import MeshPeer
from kuberay_service.models import VPN_IP_CONSTRAINT, NodeModel
from kuberay_service.schemas.nodes import (
    HeartbeatRequest,
    K3sJoin,
    MasterPeer,
    ValidatedNodeResponse,
    ValidateNodeRequest,
)
from kuberay_service.services.addresses import insert_with_free_address
from kuberay_service.services.join_keys import (
    check_node_limits,
    count_new_use,
    find_usable_join_key,
)
from kuberay_service.services.secrets import hash_secret, new_secret
from kuberay_service.settings import KubeRaySettings

__all__ = [
    "heartbeat_node",
    "joined_nodes",
    "leave_node",
    "list_nodes",
    "mesh_peers",
    "node_readiness",
    "register_node",
    "remove_node",
    "set_node_cordoned",
    "validate_node",
]

TOKEN_PREFIX = "gwnt"


def node_readiness(node: NodeModel, *, now: datetime, timeout_seconds: float) -> NodeReadiness:
    """``Ready`` once registered and while heartbeats arrive; the one place the rule lives."""
    if node.joined_at is None or node.last_heartbeat_at is None:
        return "NotReady"
    fresh = now - node.last_heartbeat_at <= timedelta(seconds=timeout_seconds)
    return "Ready" if fresh else "NotReady"


def _node_response(node: NodeModel, *, now: datetime, timeout_seconds: float) -> NodeResponse:
    return NodeResponse.model_validate(
        {
            "name": node.name,
            "status": node_readiness(node, now=now, timeout_seconds=timeout_seconds),
            "cordoned": node.cordoned,
            "labels": node.labels,
            "vpn_ip": node.vpn_ip,
            "joined_at": node.joined_at,
            "last_heartbeat_at": node.last_heartbeat_at,
            "gpus": node.gpus,
            "cpu_millis": node.cpu_millis,
            "memory_mb": node.memory_mb,
        }
    )


def _mesh_settings(settings: KubeRaySettings) -> tuple[MasterPeer, K3sJoin]:
    missing = [
        name
        for name, value in (
            ("KUBERAY_WIREGUARD_ENDPOINT", settings.wireguard_endpoint),
            ("KUBERAY_WIREGUARD_PUBLIC_KEY", settings.wireguard_public_key),
            ("KUBERAY_K3S_URL", settings.k3s_url),
            ("KUBERAY_K3S_TOKEN", settings.k3s_token),
        )
        if not value
    ]
    if missing:
        raise MeshNotConfigured(
            f"nodes cannot join yet: the master's {', '.join(missing)} is not set", settings=missing
        )
    assert settings.wireguard_endpoint and settings.wireguard_public_key and settings.k3s_url
    assert settings.k3s_token is not None
    master = MasterPeer(
        public_key=settings.wireguard_public_key,
        endpoint=settings.wireguard_endpoint,
        vpn_ip=str(settings.master_address),
    )
    return master, K3sJoin(url=settings.k3s_url, token=settings.k3s_token.get_secret_value())


def _gpus_of(request: ValidateNodeRequest) -> list[dict[str, Any]]:
    return [
        gpu.model_dump() | {"healthy": True, "free_vram_mb": None}
        for gpu in sorted(request.gpus, key=lambda gpu: gpu.index)
    ]


def _check_public_key_free(session: Session, public_key: str, hostname: str) -> None:
    holder = queries.find_node_by_public_key(session, public_key)
    if holder is not None and holder.name != hostname:
        raise NodeConflict(
            f"wireguard_public_key is already the key of node {holder.name}: "
            "each node needs a key pair of its own",
            field="wireguard_public_key",
        )


def _constraint(exc: IntegrityError) -> str | None:
    diag = getattr(exc.orig, "diag", None)
    return getattr(diag, "constraint_name", None)


def validate_node(
    session: Session, *, request: ValidateNodeRequest, settings: KubeRaySettings
) -> ValidatedNodeResponse:
    """Admit a node with its join key: its mesh address (the same again for the same node
    and key), a new node token, and where it joins.

    Raises:
        MeshNotConfigured, UnknownJoinKey, JoinKeyRevoked, JoinKeyExpired, JoinKeyUsedUp,
        JoinKeyLimit, NodeConflict, VpnPoolExhausted.
    """
    master, k3s = _mesh_settings(settings)
    now = datetime.now(UTC)
    # the key first: validations with one key wait for each other here, then see the node
    key = find_usable_join_key(session, join_key=request.join_key, now=now)
    node = queries.find_node(session, request.hostname)
    check_node_limits(key, request.gpus)
    if node is not None and node.join_key_id != key.id:
        raise NodeConflict(
            f"hostname {request.hostname} already joined with another join key; remove that "
            f"node first (DELETE /v1/nodes/{request.hostname})",
            field="hostname",
        )
    _check_public_key_free(session, request.wireguard_public_key, request.hostname)
    token, token_hash = new_secret(TOKEN_PREFIX)
    if node is None:
        count_new_use(key)
        node = NodeModel(
            name=request.hostname,
            join_key_id=key.id,
            wireguard_public_key=request.wireguard_public_key,
            token_hash=token_hash,
            gpus=_gpus_of(request),
            labels=dict(request.labels),
            cpu_millis=request.cpu_millis,
            memory_mb=request.memory_mb,
            cordoned=False,
            validated_at=now,
        )
        try:
            insert_with_free_address(
                session,
                node,
                pool=settings.mesh_cidr,
                reserved=settings.master_address,
                is_address_clash=lambda exc: _constraint(exc) == VPN_IP_CONSTRAINT,
            )
        except IntegrityError as exc:  # a racing validation of the same hostname or key
            raise NodeConflict(
                f"node {request.hostname} (or its WireGuard key) is being validated by another "
                "request right now; try again",
                field="hostname",
            ) from exc
    else:  # the script ran again: same address, the new token, key and inventory
        node.wireguard_public_key = request.wireguard_public_key
        node.token_hash = token_hash
        node.gpus = _gpus_of(request)
        node.labels = dict(request.labels)
        node.cpu_millis = request.cpu_millis
        node.memory_mb = request.memory_mb
        node.validated_at = now
    session.commit()
    return ValidatedNodeResponse(
        name=node.name,
        vpn_ip=node.vpn_ip,
        vpn_cidr=str(settings.mesh_cidr),
        node_token=token,
        master=master,
        k3s=k3s,
        registry=settings.registry_address,
        heartbeat_interval_seconds=settings.heartbeat_interval_seconds,
    )


def _authenticated(session: Session, token: str | None) -> NodeModel:
    node = None if not token else queries.find_node_by_token_hash(session, hash_secret(token))
    if node is None:
        raise UnknownNodeToken()
    return node


def register_node(
    session: Session, *, token: str | None, settings: KubeRaySettings
) -> NodeResponse:
    """The node's agent has joined: the node is Ready from now on (joined_at kept if set).

    Raises:
        UnknownNodeToken: no node has this token.
    """
    node = _authenticated(session, token)
    now = datetime.now(UTC)
    if node.joined_at is None:
        node.joined_at = now
    node.last_heartbeat_at = now
    session.commit()
    return _node_response(node, now=now, timeout_seconds=settings.heartbeat_timeout_seconds)


def heartbeat_node(
    session: Session, *, token: str | None, request: HeartbeatRequest, settings: KubeRaySettings
) -> NodeResponse:
    """A heartbeat: the node is alive; each GPU's health and free VRAM as reported.

    Raises:
        UnknownNodeToken: no node has this token.
        NodeNotRegistered: the node has not registered.
        InvalidRequest: ``gpus[i].index`` names a GPU the node does not have.
    """
    node = _authenticated(session, token)
    if node.joined_at is None:
        raise NodeNotRegistered(f"node {node.name} has not registered: POST /v1/nodes/register")
    known = {gpu["index"]: gpu for gpu in node.gpus}
    for position, reported in enumerate(request.gpus):
        if reported.index not in known:
            raise InvalidRequest(
                f"gpus[{position}].index",
                f"node {node.name} has no GPU {reported.index} (it has {sorted(known)})",
            )
    reports = {gpu.index: gpu for gpu in request.gpus}
    node.gpus = [  # a new list: the JSONB column is replaced, not mutated in place
        gpu | reports[gpu["index"]].model_dump(exclude={"index"})
        if gpu["index"] in reports
        else gpu
        for gpu in node.gpus
    ]
    now = datetime.now(UTC)
    node.last_heartbeat_at = now
    session.commit()
    return _node_response(node, now=now, timeout_seconds=settings.heartbeat_timeout_seconds)


def leave_node(session: Session, *, token: str | None) -> str:
    """The node leaves: its row, mesh address and token are gone. Its name.

    Raises:
        UnknownNodeToken: no node has this token (it may have left already).
    """
    node = _authenticated(session, token)
    name = node.name
    queries.delete_node(session, name)
    session.commit()
    return name


def remove_node(session: Session, *, name: str) -> None:
    """An admin removes node ``name``: its mesh address is free again.

    Raises:
        NodeNotFound: no such node.
    """
    if queries.find_node(session, name) is None:
        raise NodeNotFound(f"no node {name!r}", name=name)
    queries.delete_node(session, name)
    session.commit()


def set_node_cordoned(
    session: Session, *, name: str, cordoned: bool, settings: KubeRaySettings
) -> NodeResponse:
    """Cordon (no new work) or uncordon node ``name``; what runs there stays. The node.

    The flag lives on the node's row, so it outlives a restart of this service and of the
    gateway (whose registry inventory reads it as every GPU unschedulable).

    Raises:
        NodeNotFound: no such node.
    """
    node = queries.find_node(session, name)
    if node is None:
        raise NodeNotFound(f"no node {name!r}", name=name)
    node.cordoned = cordoned
    session.commit()
    now = datetime.now(UTC)
    return _node_response(node, now=now, timeout_seconds=settings.heartbeat_timeout_seconds)


def list_nodes(session: Session, *, settings: KubeRaySettings) -> NodeListResponse:
    """Every node with its GPUs, liveness, mesh address and join time (the inventory's read)."""
    now = datetime.now(UTC)
    timeout = settings.heartbeat_timeout_seconds
    return NodeListResponse(
        nodes=tuple(
            _node_response(node, now=now, timeout_seconds=timeout)
            for node in queries.list_nodes(session)
        )
    )


def mesh_peers(session: Session) -> list[MeshPeer]:
    """The master's WireGuard peers the registry calls for: one per node, validated or joined."""
    return [
        MeshPeer(name=node.name, public_key=node.wireguard_public_key, vpn_ip=node.vpn_ip)
        for node in queries.list_nodes(session)
    ]


def joined_nodes(session: Session, *, settings: KubeRaySettings) -> list[NodeResponse]:
    """The nodes that registered (each gets a Ray worker group), Ready or not."""
    return [node for node in list_nodes(session, settings=settings).nodes if node.joined_at]
