"""``/v1/accounts``: open, read, mint into, deduct from, list the ledger."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Response

from credit_service.routers.common import NamespaceDep, SessionDep
from credit_service.services import accounts, movements
from gridweave_clients.credit.models import (
    AccountResponse,
    DeductRequest,
    LedgerPageResponse,
    MintRequest,
    MovementResponse,
    UserId,
)
from gridweave_clients.fields import DatabaseId
from gridweave_runtime.auth import callable_by, require_internal_caller
from gridweave_runtime.responses import mark_replayed

__all__ = ["MINT_ROLES", "router"]

MINT_ROLES = ("admin", "faucet")

router = APIRouter(
    prefix="/v1/accounts", tags=["accounts"], dependencies=[Depends(require_internal_caller)]
)
UserIdPath = Annotated[UserId, Path()]


@router.put("/{user_id}", dependencies=callable_by("admin"))
def open_account(user_id: UserIdPath, session: SessionDep) -> AccountResponse:
    """Open the account of a user (idempotent)."""
    return accounts.open_account(session, user_id=user_id)


@router.get("/{user_id}")
def get_account(user_id: UserIdPath, session: SessionDep) -> AccountResponse:
    """Balance, held and available money of a user."""
    return accounts.get_user_account(session, user_id=user_id)


@router.get("/{user_id}/ledger")
def list_ledger(
    user_id: UserIdPath,
    session: SessionDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    before_id: Annotated[DatabaseId | None, Query()] = None,
) -> LedgerPageResponse:
    """The account's ledger entries, newest first."""
    return accounts.list_account_entries(session, user_id=user_id, limit=limit, before_id=before_id)


@router.post("/{user_id}/mint", dependencies=callable_by(*MINT_ROLES))
def mint(
    user_id: UserIdPath,
    body: MintRequest,
    namespace: NamespaceDep,
    session: SessionDep,
    response: Response,
) -> MovementResponse:
    """Create credits on a user's account (an admin or the faucet; refused before its input
    is read)."""
    result, replayed = movements.mint_credits(
        session,
        caller=namespace,
        user_id=user_id,
        amount=body.amount,
        idempotency_key=body.idempotency_key,
    )
    mark_replayed(response, replayed)
    return result


@router.post("/{user_id}/deduct", dependencies=callable_by("metering", "admin"))
def deduct(
    user_id: UserIdPath,
    body: DeductRequest,
    namespace: NamespaceDep,
    session: SessionDep,
    response: Response,
) -> MovementResponse:
    """Take credits from a user's available balance; 402 when they are not there."""
    result, replayed = movements.deduct_credits(
        session,
        caller=namespace,
        user_id=user_id,
        amount=body.amount,
        idempotency_key=body.idempotency_key,
    )
    mark_replayed(response, replayed)
    return result
