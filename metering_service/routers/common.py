"""Dependencies the routers share."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from gridweave_clients.credit import AsyncCreditClient, CreditClient
from gridweave_runtime.async_connections import AsyncConnections
from gridweave_runtime.clients import state_dependency
from gridweave_runtime.database import session_dependency
from metering_service.settings import MeteringSettings

__all__ = [
    "AsyncConnectionsDep",
    "AsyncCreditDep",
    "CreditDep",
    "SessionDep",
    "SettingsDep",
]


async def _settings(request: Request) -> MeteringSettings:
    settings: MeteringSettings = request.app.state.settings
    return settings


SessionDep = Annotated[Session, Depends(session_dependency)]
CreditDep = Annotated[CreditClient, Depends(state_dependency("credit_client", CreditClient))]
SettingsDep = Annotated[MeteringSettings, Depends(_settings)]
AsyncCreditDep = Annotated[
    AsyncCreditClient, Depends(state_dependency("async_credit_client", AsyncCreditClient))
]
AsyncConnectionsDep = Annotated[
    AsyncConnections, Depends(state_dependency("async_connections", AsyncConnections))
]
