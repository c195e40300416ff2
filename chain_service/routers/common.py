"""Dependencies the routers share."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from chain_service.settings import ChainSettings
from chain_service.signing import SigningKey
from gridweave_runtime.clients import state_dependency
from gridweave_runtime.database import session_dependency

__all__ = ["SessionDep", "SettingsDep", "SigningKeyDep"]


async def _settings(request: Request) -> ChainSettings:
    settings: ChainSettings = request.app.state.settings
    return settings


SessionDep = Annotated[Session, Depends(session_dependency)]
SettingsDep = Annotated[ChainSettings, Depends(_settings)]
SigningKeyDep = Annotated[SigningKey, Depends(state_dependency("signing_key", SigningKey))]
