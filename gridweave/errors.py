"""The SDK's exceptions, one tree.

Tree::

    GridweaveError
    ├── ConfigurationError       a bad decorator argument, or no platform URL / API key
    ├── PlatformUnreachable      no usable answer from the platform (after the client's retries)
    ├── InsufficientCredits      402: balance, held, available, needed (micro-credits)
    ├── SpendingLimitReached     402: past a spending cap: cap, limit, spent, asked (micro-credits)
    ├── NoGpuLargeEnough         422: no GPU could ever hold the job; the largest there is
    ├── QuotaExceeded            429: past a quota an admin set: quota, limit, in_use, asked
    ├── JobNotFinished           ``result(timeout=)`` ran out first
    ├── JobDidNotComplete        cancelled, timed out, or failed without a traceback
    │   └── OutOfMemory          killed past its memory limit: ``limit_mb``
    ├── RemoteError              the function (or an endpoint's method) raised remotely, and its
    │                            type could not be rebuilt
    ├── MapItemFailed            one item of ``.map`` failed: ``index``, the cause chained
    ├── EndpointNotRunning       an endpoint failed or stopped, or did not run in time
    └── EndpointCallFailed       a call to an endpoint answered another error: status and body

An exception the function (or an endpoint's method) raised remotely is re-raised as its own
type when that type is a built-in one; it carries ``remote_traceback`` (the text) and shows
it as a note.
Other refusals of the platform pass as ``gridweave_clients`` errors.
"""

from __future__ import annotations

__all__ = [
    "ConfigurationError",
    "EndpointCallFailed",
    "EndpointNotRunning",
    "GridweaveError",
    "InsufficientCredits",
    "JobDidNotComplete",
    "JobNotFinished",
    "MapItemFailed",
    "NoGpuLargeEnough",
    "OutOfMemory",
    "PlatformUnreachable",
    "QuotaExceeded",
    "RemoteError",
    "SpendingLimitReached",
]


class GridweaveError(Exception):
    """Base of every error the SDK raises itself."""


class ConfigurationError(GridweaveError, ValueError):
    """A bad argument (named in the message), or the platform's URL or key is missing."""


class PlatformUnreachable(GridweaveError):
    """The platform did not answer usably: not started, wrong URL, or down."""

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(f"{message} (platform at {url}; set GRIDWEAVE_URL?)")
        self.url = url


class InsufficientCredits(GridweaveError):
    """The credit hold could not be placed; figures in micro-credits."""

    def __init__(
        self, message: str, *, balance: int, held: int, available: int, needed: int
    ) -> None:
        super().__init__(
            f"{message} (balance {balance}, held {held}, available {available}, "
            f"needed {needed} micro-credits)"
        )
        self.balance = balance
        self.held = held
        self.available = available
        self.needed = needed


class SpendingLimitReached(GridweaveError):
    """The hold would pass a spending cap (yours or an admin's); nothing was created.

    ``cap``: ``monthly`` or ``per_job``; ``limit`` (the cap in force), ``spent`` (what this
    calendar month, UTC, charged plus what is held now) and ``asked`` (the hold), in
    micro-credits.
    """

    def __init__(self, message: str, *, cap: str, limit: int, spent: int, asked: int) -> None:
        super().__init__(message)
        self.cap = cap
        self.limit = limit
        self.spent = spent
        self.asked = asked


class NoGpuLargeEnough(GridweaveError):
    """No GPU of the inventory could ever hold the job (``field``: what to change:
    ``vram_mb``, ``gpu_count``, ``vendor``, ``gpu_models`` (no GPU of those models),
    ``cpu_millis`` or ``memory_mb`` (no node with such GPUs has that much))."""

    def __init__(self, message: str, *, field: str, largest_vram_mb: int | None) -> None:
        super().__init__(message)
        self.field = field
        #: the largest GPU's VRAM in MiB, when the platform named one
        self.largest_vram_mb = largest_vram_mb


class QuotaExceeded(GridweaveError):
    """The submission would take you past a quota an admin set; nothing was created.

    ``quota``: ``max_gpus`` or ``max_vram_mb``; ``limit``, ``in_use`` (what your unfinished
    jobs and deployed endpoints hold) and ``asked``, in GPUs or MiB of VRAM.
    """

    def __init__(self, message: str, *, quota: str, limit: int, in_use: int, asked: int) -> None:
        super().__init__(message)
        self.quota = quota
        self.limit = limit
        self.in_use = in_use
        self.asked = asked


class JobNotFinished(GridweaveError):
    """The wait for a result ran out; the job goes on (``job_id``)."""

    def __init__(self, job_id: str, phase: str) -> None:
        super().__init__(f"job {job_id} has not finished (phase {phase})")
        self.job_id = job_id
        self.phase = phase


class JobDidNotComplete(GridweaveError):
    """The job ended without a result and without an exception of its own (``phase``)."""

    def __init__(self, message: str, *, job_id: str, phase: str, reason: str | None) -> None:
        super().__init__(message)
        self.job_id = job_id
        self.phase = phase
        self.reason = reason


class OutOfMemory(JobDidNotComplete):
    """The job used more memory than its limit (``limit_mb``, MiB) and was killed."""

    def __init__(self, message: str, *, job_id: str, phase: str, limit_mb: int | None) -> None:
        super().__init__(message, job_id=job_id, phase=phase, reason="OutOfMemory")
        self.limit_mb = limit_mb


class RemoteError(GridweaveError):
    """The function raised on the GPU node; ``remote_traceback`` is its traceback text
    (``job_id`` is empty when an endpoint's method raised)."""

    def __init__(
        self, message: str, *, job_id: str, exception_type: str | None, remote_traceback: str
    ) -> None:
        super().__init__(message)
        self.job_id = job_id
        self.exception_type = exception_type
        self.remote_traceback = remote_traceback


class MapItemFailed(GridweaveError):
    """Item ``index`` of a ``.map`` failed; its own error is ``__cause__``."""

    def __init__(self, index: int, cause: BaseException) -> None:
        super().__init__(f"map item {index} failed: {type(cause).__name__}: {cause}")
        self.index = index


class EndpointNotRunning(GridweaveError):
    """An endpoint that failed or stopped, or did not run within the wait."""

    def __init__(self, name: str, phase: str, reason: str | None, message: str | None) -> None:
        super().__init__(f"endpoint {name} is {phase} ({reason or 'no reason'}): {message or ''}")
        self.name = name
        self.phase = phase
        self.reason = reason


class EndpointCallFailed(GridweaveError):
    """A call to an endpoint answered an error: ``status_code`` and the ``body`` text."""

    def __init__(self, name: str, method: str, status_code: int, body: str) -> None:
        super().__init__(f"endpoint {name}: {method} answered HTTP {status_code}: {body[:500]}")
        self.name = name
        self.method = method
        self.status_code = status_code
        self.body = body
