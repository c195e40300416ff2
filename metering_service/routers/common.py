"""Dependencies the routers share."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from gridweave_clients.credit import CreditClient
from gridweave_runtime.clients import state_dependency
from gridweave_runtime.database import session_dependency
from metering_service.settings import MeteringSettings

__all__ = ["CreditDep", "SessionDep", "SettingsDep"]


async def _settings(request: Request) -> MeteringSettings:
    settings: MeteringSettings = request.app.state.settings
    return settings


SessionDep = Annotated[Session, Depends(session_dependency)]
CreditDep = Annotated[CreditClient, Depends(state_dependency("credit_client", CreditClient))]
SettingsDep = Annotated[MeteringSettings, Depends(_settings)]
