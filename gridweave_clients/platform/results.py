"""A job's result as the platform serves it: the bytes, checked against their recorded digest.

The trusted worker stores a job's result and records its SHA-256 in the job's status, where
no user code can write; the platform sends that digest beside the bytes. A client refuses
bytes that do not match it (or come without one) before anyone unpickles them, so nobody
but the job itself decides what a user's machine unpickles.
"""

from __future__ import annotations

import hashlib
import hmac

from gridweave_clients._core import Answer

__all__ = ["RESULT_SHA256_HEADER", "checked_result"]

RESULT_SHA256_HEADER = "X-Gridweave-Result-Sha256"


def checked_result(answer: Answer) -> bytes:
    """The result's bytes; ``ValueError`` when they do not match the recorded digest."""
    recorded = answer.headers.get(RESULT_SHA256_HEADER)
    if not recorded:
        raise ValueError(
            f"the result came without its recorded digest ({RESULT_SHA256_HEADER}): not unpickled"
        )
    actual = hashlib.sha256(answer.content).hexdigest()
    if not hmac.compare_digest(actual, recorded.strip().lower()):
        raise ValueError(
            f"the result's SHA-256 {actual} is not the one the job recorded ({recorded}): "
            "the stored result was changed after the job wrote it; not unpickled"
        )
    return answer.content
