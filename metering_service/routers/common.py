"""Dependencies the routers share."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from credit_service.client import CreditClient, credit_client_dependency
from gridweave_runtime.database import session_dependency
from metering_service.settings import MeteringSettings

__all__ = ["CreditDep", "SessionDep", "SettingsDep"]


async def _settings(request: Request) -> MeteringSettings:
    settings: MeteringSettings = request.app.state.settings
    return settings


SessionDep = Annotated[Session, Depends(session_dependency)]
CreditDep = Annotated[CreditClient, Depends(credit_client_dependency)]
SettingsDep = Annotated[MeteringSettings, Depends(_settings)]
