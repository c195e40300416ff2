"""``/v1/books``: the books checked (every account against its ledger and open holds)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from credit_service.routers.common import SessionDep
from credit_service.services import books
from gridweave_clients.credit.models import BooksResponse
from gridweave_runtime.auth import callable_by, require_internal_caller

__all__ = ["router"]

router = APIRouter(tags=["books"], dependencies=[Depends(require_internal_caller)])


@router.get("/v1/books", dependencies=callable_by("admin"))
def check_books(session: SessionDep) -> BooksResponse:
    """Every account's balance against its ledger (the sum of its entries, the last entry's
    balance) and its held money against its open holds, in one snapshot; the accounts that
    disagree are listed with their figures (none, while the books hold)."""
    return books.check_books(session)
