"""Dependencies the routers share."""

from __future__ import annotations

import ipaddress
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from gridweave_clients.credit import AsyncCreditClient
from gridweave_clients.faucet import FaucetClient
from gridweave_clients.metering import AsyncMeteringClient
from gridweave_clients.nodes import AsyncNodeRegistryClient
from gridweave_runtime.clients import state_dependency
from gridweave_runtime.database import session_dependency
from platform_service.auth import require_admin, require_user
from platform_service.services.jobs import JobServices
from platform_service.services.keys import AuthenticatedUser
from platform_service.settings import PlatformSettings

__all__ = [
    "AdminDep",
    "ClientAddressDep",
    "CreditDep",
    "FaucetDep",
    "HmacKeyDep",
    "JobServicesDep",
    "MeteringDep",
    "NodeRegistryDep",
    "SessionDep",
    "SettingsDep",
    "UserDep",
]


async def _settings(request: Request) -> PlatformSettings:
    settings: PlatformSettings = request.app.state.settings
    return settings


async def _hmac_key(request: Request) -> bytes:
    key: bytes = request.app.state.api_key_hmac
    return key


async def _client_address(request: Request) -> str | None:
    """The end user's IP address as this server saw it (``X-Forwarded-For`` is not believed).

    None when the peer has none (a Unix socket): the faucet then counts the platform's.
    """
    if request.client is None:
        return None
    try:
        return str(ipaddress.ip_address(request.client.host))
    except ValueError:
        return None


SessionDep = Annotated[Session, Depends(session_dependency)]
SettingsDep = Annotated[PlatformSettings, Depends(_settings)]
HmacKeyDep = Annotated[bytes, Depends(_hmac_key)]
UserDep = Annotated[AuthenticatedUser, Depends(require_user)]
AdminDep = Annotated[AuthenticatedUser, Depends(require_admin)]
ClientAddressDep = Annotated[str | None, Depends(_client_address)]
JobServicesDep = Annotated[JobServices, Depends(state_dependency("jobs", JobServices))]
CreditDep = Annotated[
    AsyncCreditClient, Depends(state_dependency("credit_client", AsyncCreditClient))
]
MeteringDep = Annotated[
    AsyncMeteringClient, Depends(state_dependency("metering_client", AsyncMeteringClient))
]
FaucetDep = Annotated[FaucetClient, Depends(state_dependency("faucet_client", FaucetClient))]
NodeRegistryDep = Annotated[
    AsyncNodeRegistryClient,
    Depends(state_dependency("node_registry_client", AsyncNodeRegistryClient)),
]
