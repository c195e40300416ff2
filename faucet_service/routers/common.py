"""Dependencies the routers share."""

from __future__ import annotations

import ipaddress
from typing import Annotated

from fastapi import Depends, Header, Request
from sqlalchemy.orm import Session

from credit_service.client import CreditClient, credit_client_dependency
from faucet_service.errors import InvalidFaucetRequest
from faucet_service.settings import FaucetSettings
from gridweave_runtime.auth import Caller, require_internal_caller
from gridweave_runtime.database import session_dependency

__all__ = [
    "CLIENT_ADDRESS_HEADER",
    "CallerDep",
    "ClientAddressDep",
    "CreditDep",
    "SessionDep",
    "SettingsDep",
]

# Set by platform_service to the end user's IP address; trusted because the token matched.
CLIENT_ADDRESS_HEADER = "X-Gridweave-Client-Address"


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
        raise InvalidFaucetRequest(CLIENT_ADDRESS_HEADER, "must be an IP address") from exc


SessionDep = Annotated[Session, Depends(session_dependency)]
CreditDep = Annotated[CreditClient, Depends(credit_client_dependency)]
SettingsDep = Annotated[FaucetSettings, Depends(_settings)]
CallerDep = Annotated[Caller, Depends(require_internal_caller)]
ClientAddressDep = Annotated[str, Depends(_client_address)]
