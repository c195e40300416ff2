"""Where one attempt of a job keeps its outcome: ``jobs/<job id>/attempt-<n>/<object>``.

The layout is a pure function of the job id and the attempt (``status.attempts`` while it
ran), so the API names a job's objects from its CRD alone and a restarted gateway finds
what a worker wrote before the crash.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["AttemptObjects", "attempt_objects"]


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
