"""The outcome record: what a worker writes last, and the only thing the gateway reads back.

A JSON object (never a pickle) at ``jobs/<id>/attempt-<n>/outcome.json``, written by the
trusted worker (user code runs in a container that cannot reach the object store), parsed
strictly and bounded in size all the same.
"""

from __future__ import annotations

import posixpath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from gridweave_clients.gateway.reasons import (
    IMAGE_PULL_FAILED,
    OUT_OF_MEMORY,
    PIP_INSTALL_FAILED,
)
from gridweave_runtime.storage import attempt_objects

__all__ = [
    "INPUTS_MISSING",
    "NETWORK_UNAVAILABLE",
    "MAX_MESSAGE_CHARS",
    "MAX_OUTCOME_BYTES",
    "OUT_OF_MEMORY",
    "WORKER_ERROR",
    "Outcome",
    "billed_wall_seconds",
    "outcome_key",
    "parse_outcome",
]

#: A larger outcome object is refused unread.
MAX_OUTCOME_BYTES = 64 * 1024
#: The message kept in the CRD (status.message) is cut to this length.
MAX_MESSAGE_CHARS = 500
#: The reason of an attempt whose inputs were gone from the object store.
INPUTS_MISSING = "InputsMissing"
#: The reason of an attempt whose node could not give its container the egress network.
NETWORK_UNAVAILABLE = "NetworkUnavailable"
#: The reason of an attempt its worker failed (not the user's code: the worker's own error).
WORKER_ERROR = "WorkerError"
#: Reasons of attempts whose function never started: billed no time.
_NEVER_STARTED = frozenset(
    {INPUTS_MISSING, IMAGE_PULL_FAILED, PIP_INSTALL_FAILED, NETWORK_UNAVAILABLE}
)


class Outcome(BaseModel):
    """How one attempt ended: ``ok`` (the result is stored) or ``exception`` (the traceback)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    job_id: str = Field(max_length=253)
    attempt: int = Field(ge=0)
    status: Literal["ok", "exception"]
    reason: str | None = Field(
        default=None,
        pattern=r"^[A-Z][A-Za-z0-9]*$",
        max_length=64,
        description=(
            "Why it failed (the job's reason): Exception (the function raised), OutOfMemory, "
            "ProcessDied (its process ended without a result), InputsMissing, "
            "ImagePullFailed, PipInstallFailed, NetworkUnavailable, WorkerError (the worker "
            "itself failed: the runtime refused the container, a store write failed)."
        ),
    )
    wall_seconds: float = Field(ge=0)
    prepare_seconds: float = Field(
        default=0.0,
        ge=0,
        description=(
            "Of the attempt's time, what the node spent making its image ready (a pull and "
            "unpack) and its pip environment (a build) before the function's container "
            "started: not billed."
        ),
    )
    started_at: float = Field(description="Unix time the function started (the worker's clock).")
    finished_at: float = Field(description="Unix time it returned or raised.")
    exception_type: str | None = Field(default=None, max_length=500)
    message: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)
    hostname: str = Field(default="", max_length=253)
    ray_node_id: str = Field(default="", max_length=128)
    pid: int = 0
    result_sha256: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{64}$",
        description="SHA-256 of the stored result, as the worker received it from the container.",
    )
    reusable: bool = Field(
        default=False,
        description=(
            "The worker may be kept warm: the attempt's container is gone, and with it "
            "everything the function started."
        ),
    )

    @property
    def function_started(self) -> bool:
        """False when the attempt ended before its function ran (its inputs, its image, its
        pip environment or its network could not be had): no time of it is billed."""
        return self.reason not in _NEVER_STARTED


def parse_outcome(data: bytes) -> Outcome:
    """Parse an outcome object (JSON only); raise ``ValueError`` when it is not one."""
    if len(data) > MAX_OUTCOME_BYTES:
        raise ValueError(f"outcome of {len(data)} bytes is over {MAX_OUTCOME_BYTES}")
    return Outcome.model_validate_json(data)


def outcome_key(job_id: str, attempt: int) -> str:
    """The key of attempt ``attempt``'s outcome record, beside its other objects."""
    result = attempt_objects(job_id, attempt).result
    return f"{posixpath.dirname(result)}/outcome.json"


def billed_wall_seconds(
    outcome: Outcome, *, started_at: float, observed: float, adopted: bool
) -> float:
    """An attempt's running time: by the gateway's clock, from ``started_at`` (the job's
    start) to ``observed`` (when the gateway saw the run end).

    An ``adopted`` attempt may have run while no gateway watched: from the earlier of the
    job's start and the worker's, to the worker's finish, bounded by when this gateway saw
    it (the worker is the trusted side: the user's code in its container cannot write the
    record). The node's pull of the job's image is not billed, nor is an attempt whose
    function never started.
    """
    if not outcome.function_started:
        return 0.0
    seen = max(0.0, observed - started_at)
    if adopted:
        started = min(started_at, outcome.started_at)
        seen = max(0.0, min(observed, outcome.finished_at) - started)
    # the trusted worker measured its image's pull: the user is not billed for it
    return max(0.0, seen - outcome.prepare_seconds)
