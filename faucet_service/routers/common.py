"""Dependencies the routers share."""

from __future__ import annotations

import ipaddress
from typing import Annotated

from fastapi import Depends, Header, Request
from sqlalchemy.orm import Session

from faucet_service.settings import FaucetSettings
from gridweave_clients.credit import CreditClient
from gridweave_clients.faucet.models import CLIENT_ADDRESS_HEADER
from gridweave_runtime.auth import Caller, require_internal_caller
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
]


async def _settings(request: Request) -> FaucetSettings:
    settings: FaucetSettings = request.app.state.settings
    return settings


async def _client_address(
    request: Request,
    forwarded: Annotated[str | None, Header(alias=CLIENT_ADDRESS_HEADER)] = None,
) -> str:
    """The end user's address: the platform's header, else the peer's own address."""
    if forwarded is None:
        return request.client.host if request.client is not None else "unknown"
    try:
        return str(ipaddress.ip_address(forwarded.strip()))
    except ValueError as exc:
        raise InvalidRequest(CLIENT_ADDRESS_HEADER, "must be an IP address") from exc


SessionDep = Annotated[Session, Depends(session_dependency)]
CreditDep = Annotated[CreditClient, Depends(state_dependency("credit_client", CreditClient))]
SettingsDep = Annotated[FaucetSettings, Depends(_settings)]
CallerDep = Annotated[Caller, Depends(require_internal_caller)]
ClientAddressDep = Annotated[str, Depends(_client_address)]
