"""Idempotency keys: a retried call replays the first answer and moves no money.

The key is claimed first, with ``INSERT ... ON CONFLICT DO NOTHING``: a concurrent duplicate
blocks on the unique key until the first transaction ends, then finds its answer. A call
that fails (402, 404...) rolls its claim back, so the same key may be tried again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from credit_service.errors import IdempotencyConflict
from credit_service.models import OperationModel

__all__ = ["run_idempotent"]

ResponseT = TypeVar("ResponseT", bound=BaseModel)


def _fingerprint(kind: str, request: Mapping[str, Any]) -> str:
    canonical = json.dumps({"kind": kind, **request}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _claim(session: Session, key: str, kind: str, fingerprint: str) -> OperationModel | None:
    """Claim ``key``; None if claimed now, else the operation that already holds it."""
    claimed = session.execute(
        insert(OperationModel)
        .values(key=key, kind=kind, fingerprint=fingerprint)
        .on_conflict_do_nothing(index_elements=["key"])
        .returning(OperationModel.key)
    ).first()
    if claimed is not None:
        return None
    existing = session.scalar(select(OperationModel).where(OperationModel.key == key))
    assert existing is not None  # the conflicting row committed before ON CONFLICT returned
    return existing


def run_idempotent(
    session: Session,
    *,
    key: str,
    kind: str,
    request: Mapping[str, Any],
    response_type: type[ResponseT],
    action: Callable[[], ResponseT],
) -> tuple[ResponseT, bool]:
    """Run ``action`` once per ``key`` and commit; return (answer, whether it was replayed).

    Raises:
        IdempotencyConflict: ``key`` was used before for another kind or other parameters.
    """
    fingerprint = _fingerprint(kind, request)
    existing = _claim(session, key, kind, fingerprint)
    if existing is not None:
        first_kind, first_fingerprint, first_response = (
            existing.kind,
            existing.fingerprint,
            existing.response,
        )
        session.rollback()
        if first_fingerprint != fingerprint or first_response is None:
            raise IdempotencyConflict(idempotency_key=key, first_kind=first_kind)
        return response_type.model_validate(first_response), True
    response = action()
    session.execute(
        update(OperationModel)
        .where(OperationModel.key == key)
        .values(response=response.model_dump(mode="json"))
    )
    session.commit()
    return response, False
