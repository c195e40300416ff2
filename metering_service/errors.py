"""metering_service errors, each with a code, an HTTP status and a default message.

Tree::

    GridweaveError (gridweave_runtime)
    └── MeteringError
        ├── UsageRecordNotFound   404
        ├── UsageRecordConflict   409  (same hold reference, different usage)
        ├── HoldOwnerMismatch     409  (owner_id, hold_owner_id: the record is not kept)
        ├── CreditRefused         credit_service's refusal of a hold or a release, passed
        │                         on with its status, code and figures (402 with the balance
        │                         or the spending cap, 409 another amount for the reference)
        ├── CreditUnavailable     503  (credit_service did not answer: nothing is known moved)
        └── CreditMisconfigured   502  (credit_service refused metering's credential)

A usage record that passes the schema but breaks a rule (vendor, tiers, counts) raises
gridweave_runtime's ``InvalidRequest`` (422 ``invalid_request``, the field named).
"""

from __future__ import annotations

from gridweave_clients.errors import ServiceRefused
from gridweave_runtime.errors import GridweaveError

__all__ = [
    "CreditMisconfigured",
    "CreditRefused",
    "CreditUnavailable",
    "HoldOwnerMismatch",
    "MeteringError",
    "UsageRecordConflict",
    "UsageRecordNotFound",
]


class MeteringError(GridweaveError):
    """Base of metering_service's errors."""

    code = "metering_error"
    status_code = 400
    message = "the metering operation failed"


class UsageRecordNotFound(MeteringError):
    """No such usage record."""

    code = "usage_record_not_found"
    status_code = 404
    message = "no such usage record"


class UsageRecordConflict(MeteringError):
    """The hold (the job, or the endpoint run) already has a usage record with other figures."""

    code = "usage_record_conflict"
    status_code = 409
    message = "this job or endpoint run already has a different usage record"


class HoldOwnerMismatch(MeteringError):
    """The hold of the record's reference is on another account than the record's owner."""

    code = "hold_owner_mismatch"
    status_code = 409
    message = "the credit hold of this reference belongs to another account than owner_id"


class CreditRefused(MeteringError):
    """credit_service refused a hold or a release: its answer, passed on as it was."""

    def __init__(self, refusal: ServiceRefused) -> None:
        super().__init__(refusal.message, **refusal.details)
        self.status_code = refusal.status_code
        self.code = refusal.code


class CreditUnavailable(MeteringError):
    """credit_service did not answer; nothing is known to have moved: try again."""

    code = "credit_unavailable"
    status_code = 503
    message = "credit_service is unavailable: try again"


class CreditMisconfigured(MeteringError):
    """credit_service refused metering's own credential (401/403): a deployment fault."""

    code = "credit_misconfigured"
    status_code = 502
    message = "credit_service refused metering's credential: check GRIDWEAVE_CREDENTIALS"
