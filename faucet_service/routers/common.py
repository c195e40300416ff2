"""Dependencies the routers share."""

from __future__ import annotations

import ipaddress
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Request
from sqlalchemy.orm import Session

from faucet_service.settings import FaucetSettings
from gridweave_clients.credit import CreditClient
from gridweave_clients.faucet.models import CLIENT_ADDRESS_HEADER
from gridweave_runtime.auth import Caller, callable_by, require_internal_caller
from gridweave_runtime.clients import state_dependency
from gridweave_runtime.database import session_dependency
from gridweave_runtime.errors import InvalidRequest

__all__ = [
    "CLIENT_ADDRESS_HEADER",
    "CallerDep",
    "ClientAddressDep",
    "CreditDep",
    "SessionDep",
    "SettingsDep",
    "canonical_address",
    "internal_router",
]


async def _settings(request: Request) -> FaucetSettings:
    settings: FaucetSettings = request.app.state.settings
    return settings


def canonical_address(text: str) -> str:
    """One spelling per client: an IPv4-mapped IPv6 address is its IPv4 address.

    ``::ffff:203.0.113.7`` is ``203.0.113.7`` (a dual-stack socket reports IPv4 peers so),
    else one client would have two rate limits. Raises ValueError if not an IP address.
    """
    address = ipaddress.ip_address(text.strip())
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


async def _client_address(
    request: Request,
    forwarded: Annotated[str | None, Header(alias=CLIENT_ADDRESS_HEADER)] = None,
) -> str:
    """The end user's address: the platform's header, else the peer's own address."""
    if forwarded is None:
        if request.client is None:
            return "unknown"
        try:
            return canonical_address(request.client.host)
        except ValueError:
            return request.client.host  # a Unix socket's peer, say: counted as it is
    try:
        return canonical_address(forwarded)
    except ValueError as exc:
        raise InvalidRequest(CLIENT_ADDRESS_HEADER, "must be an IP address") from exc


SessionDep = Annotated[Session, Depends(session_dependency)]
CreditDep = Annotated[CreditClient, Depends(state_dependency("credit_client", CreditClient))]
SettingsDep = Annotated[FaucetSettings, Depends(_settings)]
CallerDep = Annotated[Caller, Depends(require_internal_caller)]
ClientAddressDep = Annotated[str, Depends(_client_address)]


def internal_router(prefix: str, tag: str) -> APIRouter:
    """The router of one resource: every route requires the platform's credential."""
    return APIRouter(prefix=prefix, tags=[tag], dependencies=callable_by("platform"))
