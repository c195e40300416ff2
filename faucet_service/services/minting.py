"""The one function that mints a grant or a refill and moves it from pending to minted."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.orm import Session

from faucet_service.errors import CreditRefused, CreditUnavailable
from faucet_service.models import GrantModel, MintState, RefillModel
from gridweave_clients.credit import CreditClient
from gridweave_clients.errors import ServiceRefused, ServiceUnavailable

__all__ = ["mint_pending"]


def mint_pending(
    session: Session, row: GrantModel | RefillModel, credit: CreditClient
) -> int | None:
    """Mint ``row`` through credit_service unless minted already; commits.

    Returns the balance credit_service reported after the mint (None if it was minted
    before). The row's idempotency key makes a repeated mint a replay there.

    Raises:
        CreditUnavailable: credit_service unreachable; the row stays pending for a replay.
        CreditRefused: credit_service refused the mint.
    """
    if row.state == MintState.MINTED:
        session.commit()
        return None
    try:
        movement = credit.mint(
            user_id=row.user_id, amount=row.amount, idempotency_key=row.idempotency_key
        )
    except ServiceUnavailable as exc:
        session.commit()
        raise CreditUnavailable() from exc
    except ServiceRefused as exc:
        session.commit()
        raise CreditRefused(credit_code=exc.code, credit_status=exc.status_code) from exc
    row.state = MintState.MINTED
    row.minted_at = datetime.now(UTC)
    session.commit()
    return movement.account.balance
