"""metering_service errors, each with a code, an HTTP status and a default message.

Tree::

    GridweaveError (gridweave_runtime)
    └── MeteringError
        ├── InvalidUsage          422  (body: fields, like request validation errors)
        ├── UsageRecordNotFound   404
        └── UsageRecordConflict   409  (same hold reference, different usage)
"""

from __future__ import annotations

from gridweave_runtime.errors import GridweaveError

__all__ = ["InvalidUsage", "MeteringError", "UsageRecordConflict", "UsageRecordNotFound"]


class MeteringError(GridweaveError):
    """Base of metering_service's errors."""

    code = "metering_error"
    status_code = 400
    message = "the metering operation failed"


class InvalidUsage(MeteringError):
    """A usage record that passes the schema but not the rules (vendor, tiers, counts)."""

    code = "invalid_request"
    status_code = 422
    message = "invalid usage record"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"invalid fields: {field}", fields=[{"field": field, "message": message}])


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
