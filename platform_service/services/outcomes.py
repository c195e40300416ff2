"""What a user's job left: its result (the pickled bytes, opaque) and its output.

The gateway names where the objects are (``GET /v1/jobs/{id}/result``, from the CRD
alone); the platform reads them from the object store and hands them over as they are.
It never unpickles a result: only the SDK does, on the user's machine.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator

import anyio
from anyio import to_thread

from gridweave_clients.gateway import models as gw
from gridweave_clients.gateway import operations as gw_ops
from gridweave_clients.platform.models import JobLogsResponse
from gridweave_controller.phases import JOB_TERMINAL_PHASES, JobPhase
from gridweave_runtime.errors import InvalidRequest
from gridweave_runtime.storage import (
    LogSlice,
    ObjectNotFound,
    ObjectStore,
    ObjectStoreError,
    read_log,
)
from platform_service.errors import (
    DownstreamFailed,
    DownstreamUnavailable,
    JobDidNotComplete,
    JobNotFinished,
    TooManyLogStreams,
)
from platform_service.services.downstream import as_user, downstream_errors
from platform_service.services.jobs import JobServices, get_own_job

__all__ = [
    "LOG_STREAMS",
    "LogStreamSlots",
    "MAX_LINE_BYTES",
    "MAX_TRACEBACK_BYTES",
    "job_log_bytes",
    "job_logs",
    "job_result",
    "parse_log_position",
    "stream_job_logs",
]

#: The most of a remote traceback a refusal carries (its tail: the raise is at the end).
MAX_TRACEBACK_BYTES = 64 * 1024
#: A line longer than this is sent in pieces rather than held back until its newline.
MAX_LINE_BYTES = 64 * 1024
LOG_STREAMS = ("stdout", "stderr")
#: The most of one output a live stream reads per poll (a reconnection far behind catches up
#: in steps, without waiting).
STREAM_READ_BYTES = 1024 * 1024
#: A comment line this often keeps proxies from closing a quiet stream.
_HEARTBEAT_SECONDS = 15.0


async def _outcome(
    services: JobServices, *, user_id: str, job_id: str, wait_s: float = 0.0
) -> gw.JobResultResponse:
    """Where the user's job's outcome is; with ``wait_s``, once it has finished (or the wait
    ran out: the gateway holds the call until its informer sees the job end)."""
    await get_own_job(services, user_id=user_id, job_id=job_id)
    with downstream_errors("job_gateway", passed=()):
        return await services.gateway.run(
            as_user(gw_ops.get_job_result(job_id, wait=wait_s), user_id)
        )


async def _read_range(
    store: ObjectStore,
    uri: str | None,
    start: int,
    end: int | None = None,
    *,
    last: int | None = None,
) -> LogSlice:
    """Bytes ``[start, end)`` of the output at ``uri`` (only those: a ranged read), the last
    ``last`` of them with ``last``; empty when nothing is (or was ever) there."""
    if uri is None:
        return LogSlice(b"", 0, 0)
    try:
        return await to_thread.run_sync(lambda: read_log(store, uri, start, end, last=last))
    except ObjectNotFound:
        return LogSlice(b"", 0, 0)
    except ObjectStoreError as exc:
        raise DownstreamUnavailable(
            "object storage is unavailable: try again", service="storage"
        ) from exc


async def job_result(
    services: JobServices, *, user_id: str, job_id: str, wait_s: float = 0.0
) -> tuple[bytes, str | None]:
    """The pickled return value of a Completed job and its SHA-256 as the job's status
    records it; 409 while running (after waiting up to ``wait_s`` for it to finish) or when
    it did not complete."""
    outcome = await _outcome(services, user_id=user_id, job_id=job_id, wait_s=wait_s)
    if outcome.phase not in JOB_TERMINAL_PHASES:
        raise JobNotFinished(job_id=job_id, phase=outcome.phase.value)
    if outcome.phase is not JobPhase.COMPLETED:
        read = await _read_range(services.store, outcome.error_ref, 0, last=MAX_TRACEBACK_BYTES)
        traceback = read.data
        raise JobDidNotComplete(
            f"the job ended {outcome.phase.value}"
            + (f": {outcome.message}" if outcome.message else ""),
            job_id=job_id,
            phase=outcome.phase.value,
            reason=outcome.reason,
            job_message=outcome.message,
            traceback=traceback.decode("utf-8", errors="replace") or None,
        )
    if outcome.result_ref is None:
        raise DownstreamFailed(
            "the job completed without a result reference", service="job_gateway"
        )
    try:
        data = await to_thread.run_sync(services.store.get, outcome.result_ref)
    except ObjectStoreError as exc:
        raise DownstreamUnavailable(
            "the job's result could not be read: try again", service="storage"
        ) from exc
    return data, outcome.result_sha256


async def _tail(
    store: ObjectStore, uri: str | None, offset: int, limit: int
) -> tuple[str, int, bool]:
    """The text from ``offset`` (its last ``limit`` bytes), the next offset, truncated."""
    read = await _read_range(store, uri, offset, last=limit)
    truncated = read.start > min(offset, read.size)
    return read.data.decode("utf-8", errors="replace"), read.size, truncated


async def job_logs(
    services: JobServices,
    *,
    user_id: str,
    job_id: str,
    stdout_offset: int,
    stderr_offset: int,
    limit: int,
) -> JobLogsResponse:
    """stdout and stderr of the job's latest attempt that ran, from the offsets given."""
    outcome = await _outcome(services, user_id=user_id, job_id=job_id)
    stdout, stdout_next, stdout_cut = await _tail(
        services.store, outcome.stdout_ref, stdout_offset, limit
    )
    stderr, stderr_next, stderr_cut = await _tail(
        services.store, outcome.stderr_ref, stderr_offset, limit
    )
    return JobLogsResponse(
        job_id=job_id,
        phase=outcome.phase,
        finished=outcome.finished,
        stdout=stdout,
        stderr=stderr,
        stdout_offset=stdout_next,
        stderr_offset=stderr_next,
        stdout_truncated=stdout_cut,
        stderr_truncated=stderr_cut,
    )


async def job_log_bytes(
    services: JobServices,
    *,
    user_id: str,
    job_id: str,
    stream: str,
    offset: int = 0,
    length: int | None = None,
) -> LogSlice:
    """One stream (``stdout`` or ``stderr``) of the job's latest attempt: all of it, or the
    ``length`` bytes from ``offset`` (only those are read), with the stream's size."""
    outcome = await _outcome(services, user_id=user_id, job_id=job_id)
    ref = outcome.stdout_ref if stream == "stdout" else outcome.stderr_ref
    return await _read_range(
        services.store, ref, offset, None if length is None else offset + length
    )


class LogStreamSlots:
    """How many live log streams each user holds open (this process), at most ``limit``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._open: dict[str, int] = {}

    def take(self, user_id: str) -> None:
        """One more stream for ``user_id``; TooManyLogStreams (429) past the limit."""
        held = self._open.get(user_id, 0)
        if held >= self.limit:
            raise TooManyLogStreams(
                f"{held} live log streams are open, the most one user may hold "
                f"(PLATFORM_MAX_LOG_STREAMS_PER_USER={self.limit}): close one and retry",
                limit=self.limit,
            )
        self._open[user_id] = held + 1

    def give_back(self, user_id: str) -> None:
        """A stream of ``user_id`` ended."""
        held = self._open.get(user_id, 0) - 1
        if held > 0:
            self._open[user_id] = held
        else:
            self._open.pop(user_id, None)

    def held(self, user_id: str) -> int:
        """How many streams ``user_id`` holds open now."""
        return self._open.get(user_id, 0)


_LOG_POSITION = re.compile(r"([0-9]{1,19})\.([0-9]{1,19})")


def parse_log_position(value: str, *, field: str) -> tuple[int, int]:
    """An event id of :func:`stream_job_logs` (``<stdout offset>.<stderr offset>``)."""
    found = _LOG_POSITION.fullmatch(value.strip())
    if found is None:  # ASCII digits only: str.isdigit() also takes "²", which int() refuses
        raise InvalidRequest(field, "not a log position this API sent (<stdout>.<stderr>)")
    return int(found[1]), int(found[2])


def _complete_lines(chunk: bytes, *, finished: bool) -> list[bytes]:
    """The whole lines of ``chunk`` (the rest too once ``finished``: the job ended and this is
    the output's end; or when it has grown past :data:`MAX_LINE_BYTES`)."""
    end = len(chunk) if finished else chunk.rfind(b"\n") + 1
    if end == 0 and len(chunk) >= MAX_LINE_BYTES:
        end = MAX_LINE_BYTES
    return chunk[:end].splitlines(keepends=True)


def _event(name: str, line: bytes, position: tuple[int, int]) -> str:
    text = line.rstrip(b"\r\n").decode("utf-8", errors="replace")
    data = "".join(f"data: {part}\n" for part in text.split("\n")) or "data: \n"
    return f"id: {position[0]}.{position[1]}\nevent: {name}\n{data}\n"


async def stream_job_logs(
    services: JobServices,
    *,
    user_id: str,
    job_id: str,
    start: tuple[int, int],
    poll_seconds: float,
) -> AsyncIterator[str]:
    """Server-sent events: each line the job prints (``stdout`` or ``stderr``), its id the
    byte offsets after it, so a client that reconnects with ``Last-Event-ID`` misses and
    repeats nothing; ``end`` once the job finished and every line was sent.

    The job's ownership is checked by the caller before the stream starts (a 404 is an
    answer, not an event).
    """
    offsets = list(start)
    quiet_since = time.monotonic()
    while True:
        outcome = await _outcome(services, user_id=user_id, job_id=job_id)
        refs = (outcome.stdout_ref, outcome.stderr_ref)
        behind = False  # a read stopped short of the output's end: read again at once
        for index, name in enumerate(LOG_STREAMS):
            offset = offsets[index]
            read = await _read_range(
                services.store, refs[index], offset, offset + STREAM_READ_BYTES
            )
            at_end = read.end >= read.size
            chunk = read.data if read.start == offset else b""
            for line in _complete_lines(chunk, finished=outcome.finished and at_end):
                offsets[index] += len(line)
                quiet_since = time.monotonic()
                yield _event(name, line, (offsets[0], offsets[1]))
            behind = behind or (not at_end and offsets[index] > offset)
        if behind:
            continue
        if outcome.finished:
            yield f"id: {offsets[0]}.{offsets[1]}\nevent: end\ndata: {outcome.phase.value}\n\n"
            return
        if time.monotonic() - quiet_since >= _HEARTBEAT_SECONDS:
            quiet_since = time.monotonic()
            yield ": still running\n\n"
        await anyio.sleep(poll_seconds)
