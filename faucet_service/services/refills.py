"""Refills: credits minted when the balance is low and the last refill is old enough."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from faucet_service.errors import (
    BalanceAboveThreshold,
    CreditRefused,
    CreditUnavailable,
    NotOnboarded,
    RefillTooSoon,
)
from faucet_service.models import GrantModel, MintState, RefillModel
from faucet_service.services.grants import find_grant
from faucet_service.services.minting import mint_pending
from faucet_service.services.rate_limits import count_address_request
from faucet_service.settings import FaucetSettings
from gridweave_clients.credit import CreditClient
from gridweave_clients.errors import ServiceRefused, ServiceUnavailable
from gridweave_clients.faucet.models import RefillResponse

__all__ = ["refill_response", "request_refill"]


def refill_response(refill: RefillModel, balance: int | None) -> RefillResponse:
    """Convert a refill row (and the balance after it, when known) to its API body."""
    return RefillResponse(
        refill_id=refill.id,
        user_id=refill.user_id,
        amount=refill.amount,
        state=refill.state,
        created_at=refill.created_at,
        minted_at=refill.minted_at,
        balance=balance,
    )


def _latest_refill(session: Session, user_id: str) -> RefillModel | None:
    return session.scalar(
        select(RefillModel)
        .where(RefillModel.user_id == user_id)
        .order_by(RefillModel.created_at.desc(), RefillModel.id.desc())
        .limit(1)
        .execution_options(populate_existing=True)
    )


def _current_balance(credit: CreditClient, user_id: str) -> int:
    try:
        return credit.get_account(user_id).balance
    except ServiceUnavailable as exc:
        raise CreditUnavailable() from exc
    except ServiceRefused as exc:
        if exc.code == "account_not_found":
            return 0
        raise CreditRefused(credit_code=exc.code, credit_status=exc.status_code) from exc


def _lock_onboarded_user(session: Session, user_id: str) -> GrantModel:
    """Lock the user's grant row: refills of one user run one at a time, in every process."""
    grant = find_grant(session, user_id=user_id, lock=True)
    if grant is None:
        raise NotOnboarded(user_id=user_id)
    return grant


def request_refill(
    session: Session,
    *,
    user_id: str,
    client_address: str,
    settings: FaucetSettings,
    credit: CreditClient,
) -> tuple[RefillResponse, bool]:
    """Refill ``user_id`` if due; (refill, whether an unfinished earlier one was completed).

    Raises:
        RateLimited: too many requests from this address.
        NotOnboarded: the user never verified an email.
        RefillTooSoon: the last refill is younger than the refill period.
        BalanceAboveThreshold: the balance is not below the threshold.
        CreditUnavailable: credit_service unreachable (a recorded refill stays pending).
    """
    count_address_request(session, client_address=client_address, settings=settings)
    grant = _lock_onboarded_user(session, user_id)
    if grant.state == MintState.PENDING:
        # an onboarding grant interrupted earlier comes before any refill
        mint_pending(session, grant, credit)
        _lock_onboarded_user(session, user_id)
    last = _latest_refill(session, user_id)
    if last is not None and last.state == MintState.PENDING:
        balance = mint_pending(session, last, credit)
        return refill_response(last, balance), True
    now: datetime | None = session.scalar(select(func.now()))
    assert now is not None
    period = timedelta(seconds=settings.refill_period_seconds)
    if last is not None and last.created_at + period > now:
        raise RefillTooSoon(next_refill_at=(last.created_at + period).isoformat())
    balance_before = _current_balance(credit, user_id)
    if balance_before >= settings.refill_threshold:
        raise BalanceAboveThreshold(balance=balance_before, threshold=settings.refill_threshold)
    refill = RefillModel(
        user_id=user_id,
        amount=settings.refill_amount,
        idempotency_key=f"faucet:refill:{uuid.uuid4().hex}",
        state=MintState.PENDING,
    )
    session.add(refill)
    # committed before credit_service is called: a replay finishes this refill, never a new one
    session.commit()
    _lock_onboarded_user(session, user_id)
    session.refresh(refill)
    balance = mint_pending(session, refill, credit)
    return refill_response(refill, balance), False
