"""Rate limits kept in PostgreSQL: they survive restarts and hold across processes.

A sliding window: each allowed request is a row; a request is refused when ``limit`` rows
of its scope and subject fall in the last ``window_seconds``. A transaction-scoped advisory
lock on (scope, subject) makes count-then-insert atomic across processes.

The count is committed at once, apart from the request's own transaction, so a request that
fails later still counts.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from faucet_service.errors import RateLimited
from faucet_service.models import RateLimitHitModel
from faucet_service.settings import FaucetSettings

__all__ = ["count_address_request", "count_request"]


def count_request(
    session: Session, *, scope: str, subject: str, limit: int, window_seconds: int
) -> None:
    """Count one request of ``subject`` in ``scope``; commits.

    Raises:
        RateLimited: ``limit`` requests were already counted in the window.
    """
    session.execute(
        select(func.pg_advisory_xact_lock(func.hashtext(scope), func.hashtext(subject)))
    )
    now = session.scalar(select(func.now()))
    assert now is not None
    since = now - timedelta(seconds=window_seconds)
    matching = (RateLimitHitModel.scope == scope, RateLimitHitModel.subject == subject)
    session.execute(delete(RateLimitHitModel).where(*matching, RateLimitHitModel.at < since))
    hits = session.scalar(select(func.count()).select_from(RateLimitHitModel).where(*matching))
    if hits is not None and hits >= limit:
        session.commit()
        raise RateLimited(scope=scope, limit=limit, window_seconds=window_seconds)
    session.add(RateLimitHitModel(scope=scope, subject=subject, at=now))
    session.commit()


def count_address_request(
    session: Session, *, client_address: str, settings: FaucetSettings
) -> None:
    """Count one sign-up, verification or refill from ``client_address``; commits.

    Raises:
        RateLimited: the address made ``requests_per_address`` requests in the window.
    """
    count_request(
        session,
        scope="address",
        subject=client_address,
        limit=settings.requests_per_address,
        window_seconds=settings.rate_limit_window_seconds,
    )
