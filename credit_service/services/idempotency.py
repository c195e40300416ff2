"""Idempotency keys: a retried call replays the first answer and moves no money.

A key lives in the namespace of its calling service (its role) and operation (its kind):
the operation ``(caller, kind, key)``. So one service can never claim, and so block or
replay, a key another service uses, however predictable that key is.

The key is claimed first, with ``INSERT ... ON CONFLICT DO NOTHING``: a concurrent duplicate
blocks on the unique key until the first transaction ends, then finds its answer. A call
that fails (402, 404...) rolls its claim back, so the same key may be tried again. A call
whose transaction PostgreSQL aborted to break a deadlock or a serialization conflict is run
again, claim included, from a clean transaction (as PostgreSQL asks of its clients):
nothing of the aborted attempt was committed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from credit_service import queries
from credit_service.errors import IdempotencyConflict

__all__ = ["TRANSIENT_ATTEMPTS", "request_fingerprint", "run_idempotent"]

#: Attempts of a call whose transaction PostgreSQL aborted: deadlock_detected (40P01) or
#: serialization_failure (40001).
TRANSIENT_ATTEMPTS = 3
_TRANSIENT_SQLSTATES = frozenset({"40P01", "40001"})

ResponseT = TypeVar("ResponseT", bound=BaseModel)


def request_fingerprint(kind: str, request: Mapping[str, Any]) -> str:
    """What identifies a request under its key: the same key with another one is a 409."""
    canonical = json.dumps({"kind": kind, **request}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def run_idempotent(
    session: Session,
    *,
    caller: str,
    key: str,
    kind: str,
    request: Mapping[str, Any],
    response_type: type[ResponseT],
    action: Callable[[], ResponseT],
) -> tuple[ResponseT, bool]:
    """Run ``action`` once per (caller, kind, key) and commit; return (answer, replayed).

    Raises:
        IdempotencyConflict: ``caller`` used ``key`` for this kind with other parameters.
    """
    operation = {"caller": caller, "kind": kind, "key": key}
    for attempt in range(1, TRANSIENT_ATTEMPTS + 1):
        try:
            return _run_once(session, operation, request, response_type, action)
        except OperationalError as exc:
            session.rollback()
            sqlstate = getattr(exc.orig, "sqlstate", None)
            if attempt == TRANSIENT_ATTEMPTS or sqlstate not in _TRANSIENT_SQLSTATES:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def _run_once(
    session: Session,
    operation: dict[str, str],  # caller, kind, key
    request: Mapping[str, Any],
    response_type: type[ResponseT],
    action: Callable[[], ResponseT],
) -> tuple[ResponseT, bool]:
    key = operation["key"]
    fingerprint = request_fingerprint(operation["kind"], request)
    if not queries.claim_operation(session, **operation, fingerprint=fingerprint):
        # the row's writer has committed (ON CONFLICT waited for it): replay its answer
        existing = queries.find_operation(session, **operation)
        assert existing is not None
        first_kind: str = existing.kind
        first_fingerprint: str = existing.fingerprint
        first_response: dict[str, Any] | None = existing.response
        session.rollback()
        if first_fingerprint != fingerprint or first_response is None:
            raise IdempotencyConflict(idempotency_key=key, first_kind=first_kind)
        return response_type.model_validate(first_response), True
    try:
        response = action()
    except BaseException:
        session.rollback()  # release the claim and any row locks now, in this thread
        raise
    response_json = response.model_dump_json()
    queries.store_operation_response(session, **operation, response_json=response_json)
    session.commit()
    return response, False
