"""Dependencies the routers share."""

from __future__ import annotations

import hmac
import ipaddress
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from gridweave_clients.credit import AsyncCreditClient
from gridweave_clients.faucet import FaucetClient
from gridweave_clients.gateway.quotas import UserQuotaModel
from gridweave_clients.metering import AsyncMeteringClient
from gridweave_clients.nodes import AsyncNodeRegistryClient
from gridweave_runtime.clients import state_dependency
from gridweave_runtime.database import session_dependency
from platform_service.auth import require_admin, require_user
from platform_service.services.jobs import JobServices
from platform_service.services.keys import AuthenticatedUser
from platform_service.services.user_limits import user_quota
from platform_service.settings import PlatformSettings

__all__ = [
    "AdminDep",
    "ClientAddressDep",
    "CreditDep",
    "FaucetDep",
    "HmacKeyDep",
    "JobServicesDep",
    "MeteringDep",
    "QuotaDep",
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


#: The header by which the dashboard's proxy proves itself (``PLATFORM_DASHBOARD_PROXY_SECRET``).
DASHBOARD_PROXY_HEADER = "x-gridweave-proxy"


def _ip(value: str) -> str | None:
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return None


async def _client_address(request: Request) -> str | None:
    """The end user's IP address: the connection's, or, on a request from the dashboard's
    proxy (its ``X-Gridweave-Proxy`` equal to ``PLATFORM_DASHBOARD_PROXY_SECRET``), the one
    it names in ``X-Forwarded-For``. From anyone else ``X-Forwarded-For`` is not believed:
    a caller from the internet would name any address and escape the per-address limits.

    None when the peer has none (a Unix socket): the faucet then counts the platform's.
    """
    settings: PlatformSettings = request.app.state.settings
    secret = settings.dashboard_proxy_secret
    presented = request.headers.get(DASHBOARD_PROXY_HEADER)
    if secret is not None and presented is not None:
        if hmac.compare_digest(presented.encode(), secret.get_secret_value().encode()):
            # the dashboard sends one address; were it ever a list, its own (last) counts
            forwarded = request.headers.get("x-forwarded-for", "").split(",")[-1]
            address = _ip(forwarded)
            if address is not None:
                return address
    if request.client is None:
        return None
    return _ip(request.client.host)


SessionDep = Annotated[Session, Depends(session_dependency)]
SettingsDep = Annotated[PlatformSettings, Depends(_settings)]
HmacKeyDep = Annotated[bytes, Depends(_hmac_key)]
UserDep = Annotated[AuthenticatedUser, Depends(require_user)]
AdminDep = Annotated[AuthenticatedUser, Depends(require_admin)]
ClientAddressDep = Annotated[str | None, Depends(_client_address)]


def _caller_quota(user: UserDep, session: SessionDep) -> UserQuotaModel | None:
    return user_quota(session, user.user_id)


#: The calling user's quota (None: none), read as its submission comes in; sync, so FastAPI
#: reads it on a worker thread.
QuotaDep = Annotated[UserQuotaModel | None, Depends(_caller_quota)]
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
