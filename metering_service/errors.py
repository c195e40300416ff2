"""metering_service errors, each with a code, an HTTP status and a default message.

Tree::

    GridweaveError (gridweave_runtime)
    └── MeteringError
        ├── UsageRecordNotFound   404
        ├── UsageRecordConflict   409  (same hold reference, different usage)
        └── HoldOwnerMismatch     409  (owner_id, hold_owner_id: the record is not kept)

A usage record that passes the schema but breaks a rule (vendor, tiers, counts) raises
gridweave_runtime's ``InvalidRequest`` (422 ``invalid_request``, the field named).
"""

from __future__ import annotations

from gridweave_runtime.errors import GridweaveError

__all__ = ["HoldOwnerMismatch", "MeteringError", "UsageRecordConflict", "UsageRecordNotFound"]


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
