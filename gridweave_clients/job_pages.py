"""Pages of jobs, newest first: the cursor both the gateway and the platform speak.

A cursor names the position after the last job of a page, (created_at, job_id), base64url;
walking on with it neither repeats nor skips a job when others are created meanwhile.
"""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime

__all__ = ["EPOCH", "CursorInvalid", "decode_cursor", "encode_cursor"]

EPOCH = datetime.fromtimestamp(0, UTC)


class CursorInvalid(ValueError):
    """Not a cursor a page answered."""


def encode_cursor(created_at: datetime | None, job_id: str) -> str:
    """The cursor of the position right after the job (created_at, job_id)."""
    position = f"{(created_at or EPOCH).isoformat()}|{job_id}"
    return base64.urlsafe_b64encode(position.encode()).decode()


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    """The position a cursor names."""
    try:
        created, _, job_id = base64.urlsafe_b64decode(cursor.encode()).decode().partition("|")
        position = datetime.fromisoformat(created)
    except (binascii.Error, UnicodeDecodeError, ValueError) as exc:
        raise CursorInvalid(cursor) from exc
    if not job_id or position.tzinfo is None:
        raise CursorInvalid(cursor)
    return position, job_id
