"""A user's quotas and fair-share weight: stored here, enforced and used by the gateway.

The platform's database is where they last (``user_limits``); the gateway, which keeps no
state of its own, gets them two ways:

- a quota travels with every submission it bounds (a job, each worker of a map, an endpoint
  deployment): read from the database as the request comes in, so a change is in force from
  the next submission, and the gateway checks it against what its informers show the user
  holds;
- the weights are pushed to the gateway whole (``PUT /v1/shares``) after every change and
  every ``PLATFORM_SHARES_SYNC_SECONDS``, so a restarted gateway orders users by them
  again within one period (equal weights until then).
"""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy import select
from sqlalchemy.orm import Session

from gridweave_clients.gateway import AsyncGatewayClient
from gridweave_clients.gateway.quotas import SharesRequest, UserQuotaModel, set_shares
from gridweave_clients.platform.user_limits import UserLimitsRequest, UserLimitsResponse
from gridweave_runtime.database import Database
from platform_service.errors import PlatformError
from platform_service.models import UserLimitsModel
from platform_service.services.downstream import downstream_errors
from platform_service.services.users import get_user

__all__ = [
    "SharesSync",
    "get_user_limits",
    "set_user_limits",
    "share_weights",
    "user_quota",
]

_log = logging.getLogger(__name__)


def _response(user_id: str, row: UserLimitsModel | None) -> UserLimitsResponse:
    weight = None if row is None else row.share_weight
    return UserLimitsResponse(
        user_id=user_id,
        max_gpus=None if row is None else row.max_gpus,
        max_vram_mb=None if row is None else row.max_vram_mb,
        share_weight=1.0 if weight is None else weight,
        share_weight_is_default=weight is None,
    )


def get_user_limits(session: Session, user_id: str) -> UserLimitsResponse:
    """A user's limits as in force; NotFound for no such user."""
    get_user(session, user_id)
    return _response(user_id, session.get(UserLimitsModel, user_id))


def set_user_limits(
    session: Session, user_id: str, request: UserLimitsRequest
) -> UserLimitsResponse:
    """Replace a user's limits (every field; None clears it); NotFound for no such user."""
    get_user(session, user_id)
    row = session.get(UserLimitsModel, user_id)
    if request.max_gpus is None and request.max_vram_mb is None and request.share_weight is None:
        if row is not None:
            session.delete(row)
        session.commit()
        return _response(user_id, None)
    if row is None:
        row = UserLimitsModel(user_id=user_id)
        session.add(row)
    row.max_gpus = request.max_gpus
    row.max_vram_mb = request.max_vram_mb
    row.share_weight = request.share_weight
    session.commit()
    return _response(user_id, row)


def user_quota(session: Session, user_id: str) -> UserQuotaModel | None:
    """The quota a submission of ``user_id`` carries to the gateway (None: no quota)."""
    row = session.get(UserLimitsModel, user_id)
    if row is None or (row.max_gpus is None and row.max_vram_mb is None):
        return None
    return UserQuotaModel(max_gpus=row.max_gpus, max_vram_mb=row.max_vram_mb)


async def read_user_quota(database: Database, user_id: str) -> UserQuotaModel | None:
    """:func:`user_quota` in a session of its own, on a worker thread (a wake's check)."""

    def read() -> UserQuotaModel | None:
        with database.session() as session:
            return user_quota(session, user_id)

    return await asyncio.to_thread(read)


def share_weights(session: Session) -> dict[str, float]:
    """Every user's weight that an admin set (a user not named weighs 1)."""
    rows = session.execute(
        select(UserLimitsModel.user_id, UserLimitsModel.share_weight).where(
            UserLimitsModel.share_weight.is_not(None)
        )
    )
    return {user_id: weight for user_id, weight in rows if weight is not None}


class SharesSync:
    """Pushes the stored weights to the gateway: now (:meth:`push`) and on a timer."""

    def __init__(self, database: Database, gateway: AsyncGatewayClient) -> None:
        self.database = database
        self.gateway = gateway

    def _weights(self) -> dict[str, float]:
        with self.database.session() as session:
            return share_weights(session)

    async def push(self) -> dict[str, float]:
        """Send every stored weight to the gateway; the weights it uses now."""
        weights = await asyncio.to_thread(self._weights)
        with downstream_errors("job_gateway", passed=()):
            answer = await self.gateway.run(set_shares(SharesRequest(weights=weights)))
        return answer.weights

    async def run(self, *, interval_seconds: float) -> None:
        """A push every ``interval_seconds`` until cancelled; a failed push is logged."""
        while True:
            try:
                await self.push()
            except PlatformError:
                _log.warning("the share weights could not be pushed; retried", exc_info=True)
            await asyncio.sleep(interval_seconds)
