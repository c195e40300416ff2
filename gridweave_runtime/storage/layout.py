"""Where a job's objects are: its inputs and, per attempt, its outcome.

- ``jobs/<job id>/function.pkl`` and ``jobs/<job id>/args.pkl``: what platform_service
  stored at submission (the SDK's pickled bytes, opaque to the control plane);
- ``jobs/<job id>/attempt-<n>/<object>``: what attempt ``n`` wrote.

The layout is a pure function of the job id and the attempt (``status.attempts`` while it
ran), so the API names a job's objects from its CRD alone and a restarted gateway finds
what a worker wrote before the crash.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AttemptObjects", "InputObjects", "attempt_objects", "input_objects"]


@dataclass(frozen=True, slots=True)
class InputObjects:
    """The keys (relative to the store's root) of a job's pickled function and arguments."""

    function: str
    args: str


def input_objects(job_id: str) -> InputObjects:
    """The keys platform_service stores ``job_id``'s function and ``(args, kwargs)`` under."""
    return InputObjects(function=f"jobs/{job_id}/function.pkl", args=f"jobs/{job_id}/args.pkl")


@dataclass(frozen=True, slots=True)
class AttemptObjects:
    """The keys (relative to the store's root) one attempt writes."""

    result: str
    error: str
    stdout: str
    stderr: str


def attempt_objects(job_id: str, attempt: int) -> AttemptObjects:
    """The keys of attempt ``attempt`` (0 for the first run) of ``job_id``."""
    prefix = f"jobs/{job_id}/attempt-{attempt}"
    return AttemptObjects(
        result=f"{prefix}/result.pkl",
        error=f"{prefix}/traceback.txt",
        stdout=f"{prefix}/stdout.txt",
        stderr=f"{prefix}/stderr.txt",
    )
