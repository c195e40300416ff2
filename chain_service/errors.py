"""chain_service errors, each with a code, an HTTP status and a default message.

Tree::

    GridweaveError (gridweave_runtime)
    └── ChainError
        ├── ReceiptNotFound    404
        ├── BatchNotFound      404
        └── ReceiptConflict    409  (same hold reference, other fields: differing_fields)
"""

from __future__ import annotations

from gridweave_runtime.errors import GridweaveError

__all__ = ["BatchNotFound", "ChainError", "ReceiptConflict", "ReceiptNotFound"]


class ChainError(GridweaveError):
    """Base of chain_service's errors."""

    code = "chain_error"
    status_code = 400
    message = "the chain operation failed"


class ReceiptNotFound(ChainError):
    """No such receipt."""

    code = "receipt_not_found"
    status_code = 404
    message = "no such receipt"


class BatchNotFound(ChainError):
    """No such batch."""

    code = "batch_not_found"
    status_code = 404
    message = "no such batch"


class ReceiptConflict(ChainError):
    """The settlement (hold reference) already has a receipt with other fields."""

    code = "receipt_conflict"
    status_code = 409
    message = "this settlement already has a receipt with other fields"
