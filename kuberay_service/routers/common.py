"""Dependencies of the node registry's routers: session, settings, admin, node token."""

from __future__ import annotations

import ipaddress
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from gridweave_runtime.auth import Caller, require_internal_caller, require_role
from gridweave_runtime.database import session_dependency
from kuberay_service.reconciler import Reconciler
from kuberay_service.services.rate_limits import AddressRateLimiter
from kuberay_service.settings import KubeRaySettings

__all__ = [
    "AdminDep",
    "NodeTokenDep",
    "SessionDep",
    "SettingsDep",
    "count_validation",
    "reconcile_nodes",
]


async def _settings(request: Request) -> KubeRaySettings:
    settings: KubeRaySettings = request.app.state.settings
    return settings


async def _admin(caller: Annotated[Caller, Depends(require_internal_caller)]) -> Caller:
    """A credential acting as ``admin`` (403 for another role)."""
    require_role(caller, "admin")
    return caller


async def _node_token(request: Request) -> str | None:
    """The node token of ``Authorization: Bearer <token>`` (checked by the service)."""
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


def client_address(request: Request) -> str:
    """The peer's address, one spelling per client (IPv4-mapped IPv6 is its IPv4 address).

    Only the socket's peer: the route is public, so no forwarded header is believed.
    """
    if request.client is None:
        return "unknown"
    try:
        address = ipaddress.ip_address(request.client.host)
    except ValueError:
        return request.client.host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


async def count_validation(request: Request) -> None:
    """Count a validation against its client address (429 past the limit), before the body."""
    limiter: AddressRateLimiter = request.app.state.validation_limiter
    limiter.count(client_address(request))


def reconcile_nodes(request: Request) -> None:
    """The nodes changed: the WireGuard peers and Ray worker groups follow (where run)."""
    reconcilers: list[Reconciler] = request.app.state.reconcilers
    for reconciler in reconcilers:
        reconciler.request()


SessionDep = Annotated[Session, Depends(session_dependency)]
SettingsDep = Annotated[KubeRaySettings, Depends(_settings)]
AdminDep = Annotated[Caller, Depends(_admin)]
NodeTokenDep = Annotated[str | None, Depends(_node_token)]
