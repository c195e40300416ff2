"""A remote traceback (a failed job's, an endpoint method's) turned back into an exception
on the caller's side."""

from __future__ import annotations

import builtins

from gridweave.errors import RemoteError

__all__ = ["remote_exception"]


def _last_line(traceback: str) -> str:
    lines = [line for line in traceback.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def remote_exception(job_id: str, traceback: str, *, origin: str | None = None) -> Exception:
    """The remote exception rebuilt as its own type when built in, else a ``RemoteError``.

    Either way it carries ``remote_traceback`` (the text) and shows it as a note. Only
    built-in types are rebuilt: the SDK never imports or unpickles anything to get a type.
    ``origin`` names where it was raised (default: ``job <job_id>``).
    """
    where = origin or f"job {job_id}"
    last = _last_line(traceback)
    name, _, message = last.partition(": ")
    kind = getattr(builtins, name, None) if name.isidentifier() else None
    error: Exception | None = None
    if isinstance(kind, type) and issubclass(kind, Exception):
        try:
            error = kind(message) if message else kind()
        except Exception:  # a constructor wanting other arguments: fall back below
            error = None
    if error is None:
        error = RemoteError(
            f"{where} raised {last or 'an exception'}",
            job_id=job_id,
            exception_type=name if name and " " not in name else None,
            remote_traceback=traceback,
        )
    error.remote_traceback = traceback  # type: ignore[attr-defined]
    error.add_note(f"Remote traceback ({where}):\n{traceback.rstrip()}")
    return error
