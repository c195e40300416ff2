"""credit_service errors, each with a code, an HTTP status and a default message.

Tree::

    GridweaveError (gridweave_runtime)
    └── CreditError
        ├── AccountNotFound        404
        ├── HoldNotFound           404
        ├── InsufficientFunds      402  (body: user_id, balance, held, available, needed)
        ├── SpendingLimitReached   402  (body: user_id, cap, limit, spent, asked)
        ├── IdempotencyConflict    409  (same key, different request)
        ├── HoldNotOpen            409
        ├── HoldOwnerMismatch      409  (body: reference, hold_user_id, user_id)
        ├── CaptureExceedsHold     409
        ├── BalanceLimitExceeded   409  (body: user_id, balance, amount, max_balance)
        └── ReferenceInUse         409

A bad request field (a transfer to the same account too) is gridweave_runtime's
``InvalidRequest`` (422 ``invalid_request``, the field named), as in every service.
"""

from __future__ import annotations

from gridweave_runtime.errors import GridweaveError

__all__ = [
    "AccountNotFound",
    "BalanceLimitExceeded",
    "CaptureExceedsHold",
    "CreditError",
    "HoldNotFound",
    "HoldNotOpen",
    "HoldOwnerMismatch",
    "IdempotencyConflict",
    "InsufficientFunds",
    "ReferenceInUse",
    "SpendingLimitReached",
]


class CreditError(GridweaveError):
    """Base of credit_service's errors."""

    code = "credit_error"
    status_code = 400
    message = "the credit operation failed"


class AccountNotFound(CreditError):
    """No account for this user."""

    code = "account_not_found"
    status_code = 404
    message = "no account for this user"


class HoldNotFound(CreditError):
    """No such hold."""

    code = "hold_not_found"
    status_code = 404
    message = "no such hold"


class InsufficientFunds(CreditError):
    """The available balance (balance minus open holds) cannot cover the amount."""

    code = "insufficient_funds"
    status_code = 402
    message = "the available balance cannot cover this amount"


class SpendingLimitReached(CreditError):
    """The hold would pass a spending cap: ``cap`` is ``monthly`` or ``per_job``, ``limit``
    the cap in force, ``spent`` this month's spending, ``asked`` the hold."""

    code = "spending_limit"
    status_code = 402
    message = "this hold would pass a spending limit"


class IdempotencyConflict(CreditError):
    """The idempotency key was already used for a different request."""

    code = "idempotency_conflict"
    status_code = 409
    message = "this idempotency key was already used with different parameters"


class HoldNotOpen(CreditError):
    """The hold was already captured or released."""

    code = "hold_not_open"
    status_code = 409
    message = "the hold is no longer open"


class HoldOwnerMismatch(CreditError):
    """The hold is on another user's account than the one the settlement names."""

    code = "hold_owner_mismatch"
    status_code = 409
    message = "the hold belongs to another user than the one named"


class BalanceLimitExceeded(CreditError):
    """The posting would take the balance past ``MAX_BALANCE``."""

    code = "balance_limit_exceeded"
    status_code = 409
    message = "the balance would pass the maximum an account may hold"


class CaptureExceedsHold(CreditError):
    """A capture larger than the hold."""

    code = "capture_exceeds_hold"
    status_code = 409
    message = "the capture is larger than the hold"


class ReferenceInUse(CreditError):
    """Another hold already carries this reference."""

    code = "reference_in_use"
    status_code = 409
    message = "another hold already carries this reference"
