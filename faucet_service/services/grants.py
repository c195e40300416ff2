"""The onboarding grant: recorded once per email and once per user."""

from __future__ import annotations

import hashlib
import hmac

from sqlalchemy import or_, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from faucet_service.errors import AlreadyOnboarded
from faucet_service.models import GrantModel, MintState
from gridweave_clients.faucet.models import GrantResponse

__all__ = [
    "find_grant",
    "grant_response",
    "onboarding_key",
    "record_grant",
    "refuse_if_onboarded",
]


def onboarding_key(secret: bytes, mailbox: str) -> str:
    """The credit idempotency key of a mailbox's grant, stored with the grant.

    Keyed with the faucet's secret, so nobody can compute it from the email; and
    credit_service keeps it in the faucet's own namespace of keys anyway.
    """
    digest = hmac.new(secret, f"onboarding\x00{mailbox}".encode(), hashlib.sha256).hexdigest()
    return f"faucet:onboarding:{digest}"


def grant_response(grant: GrantModel) -> GrantResponse:
    """Convert a grant row to its API body."""
    return GrantResponse(
        email=grant.email,
        user_id=grant.user_id,
        amount=grant.amount,
        state=grant.state,
        minted_at=grant.minted_at,
    )


def find_grant(session: Session, *, user_id: str, lock: bool = False) -> GrantModel | None:
    """The grant of ``user_id``, if any; locked until the transaction ends with ``lock``."""
    query = select(GrantModel).where(GrantModel.user_id == user_id)
    if lock:
        query = query.with_for_update().execution_options(populate_existing=True)
    return session.scalar(query)


def refuse_if_onboarded(session: Session, *, email: str, user_id: str) -> None:
    """Raise AlreadyOnboarded (naming the field) if the email or the user had a grant."""
    grant = session.scalar(
        select(GrantModel).where(or_(GrantModel.email == email, GrantModel.user_id == user_id))
    )
    if grant is not None:
        field = "email" if grant.email == email else "user_id"
        raise AlreadyOnboarded(field=field)


def record_grant(
    session: Session, *, email: str, user_id: str, amount: int, secret: bytes
) -> GrantModel:
    """The grant of mailbox ``email``, recorded as pending if new (flushes).

    Raises:
        AlreadyOnboarded: ``user_id`` already had a grant under another email.
    """
    session.execute(
        insert(GrantModel)
        .values(
            email=email,
            user_id=user_id,
            amount=amount,
            idempotency_key=onboarding_key(secret, email),
            state=MintState.PENDING,
        )
        .on_conflict_do_nothing()
    )
    grant = session.scalar(
        select(GrantModel)
        .where(GrantModel.email == email)
        .execution_options(populate_existing=True)
    )
    if grant is None:
        raise AlreadyOnboarded(field="user_id")
    return grant
