"""Maps: one function over many inputs, on several GPU workers, as one submission.

``f.map(items)`` pickles the function once and the inputs in chunks (each a list of
``(args, kwargs)``), and submits them as one map: up to ``concurrency`` workers, each one
GPU allocation that runs its chunks in turn in a container (the function unpickled once
per chunk, not once per input). Each input gets its own result, or its own error with the
remote traceback, tried again ``retries`` times first; a failed input does not stop the
others. Results come back chunk by chunk, each checked against the SHA-256 its worker
recorded before any value is unpickled, in the inputs' order.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import cloudpickle

from gridweave._client import platform_client, platform_errors
from gridweave._config import Config
from gridweave._pickling import dumps, dumps_program
from gridweave._remote import remote_exception
from gridweave.errors import ConfigurationError, MapItemFailed
from gridweave_clients.maps import read_chunk_record
from gridweave_clients.platform.maps import MapResponse

if TYPE_CHECKING:
    from gridweave._function import Function

__all__ = ["DEFAULT_MAP_CONCURRENCY", "MapHandle", "chunk_calls", "submit_map"]

R = TypeVar("R")
#: Workers a map runs on at most, unless asked otherwise.
DEFAULT_MAP_CONCURRENCY = 16
#: A chunk holds at most this many inputs, and chunks are aimed at 4 per worker, so
#: workers that finish early are few at the end.
MAX_CHUNK_ITEMS = 1000
_CHUNKS_PER_WORKER = 4
_POLL_SECONDS = (0.05, 1.0)

Call = tuple[tuple[Any, ...], dict[str, Any]]


def chunk_calls(calls: Sequence[Call], workers: int) -> tuple[int, list[bytes]]:
    """(inputs to a chunk, each chunk pickled) for ``calls`` on ``workers`` workers."""
    size = max(1, min(MAX_CHUNK_ITEMS, math.ceil(len(calls) / (workers * _CHUNKS_PER_WORKER))))
    chunks = [dumps(list(calls[i : i + size])) for i in range(0, len(calls), size)]
    return size, chunks


class MapHandle(Generic[R]):
    """A submitted map: its progress, its results in the inputs' order, cancel it."""

    def __init__(self, submitted: MapResponse, config: Config) -> None:
        self.map_id = submitted.map_id
        self.items = submitted.items
        self._chunks = submitted.chunks
        self._config = config
        self._client = platform_client(config)
        self._last = submitted

    def __repr__(self) -> str:
        # as of the last status read: a repr never asks the platform
        last = self._last
        return f"<MapHandle {self.map_id} {last.phase} {last.progress}>"

    @property
    def progress(self) -> str:
        """``done/items`` as of the last status read, and the failed inputs if any
        (``"40/100 (2 failed)"``); ``status()`` reads it anew."""
        return self._last.progress

    def status(self) -> MapResponse:
        """The map now: phase, inputs done and failed, its workers."""
        with platform_errors(self._config.url):
            self._last = self._client.get_map(self.map_id)
        return self._last

    def wait(
        self,
        timeout: float | None = None,
        progress: Callable[[MapResponse], None] | None = None,
    ) -> MapResponse:
        """Block until every worker finished (``progress`` is called with each new status);
        ``TimeoutError`` after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = _POLL_SECONDS[0]
        while True:
            status = self.status()
            if progress is not None:
                progress(status)
            if status.finished:
                return status
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"map {self.map_id} did not finish within {timeout} s")
            time.sleep(delay)
            delay = min(_POLL_SECONDS[1], delay * 1.5)

    def results(self, *, return_exceptions: bool = False) -> list[R | BaseException]:
        """Every input's value, in order, once the map finished; a failed input's error
        in its place (``return_exceptions``) or raised as ``MapItemFailed`` (the first
        failed input's index, its error chained)."""
        self.wait()
        values: list[R | BaseException] = []
        for index, value, error in self.iter_outcomes():
            if error is None:
                values.append(cast(R, value))
            elif return_exceptions:
                values.append(error)
            else:
                raise MapItemFailed(index, error) from error
        return values

    def iter_outcomes(self) -> Iterator[tuple[int, R | None, BaseException | None]]:
        """(index, value, error) of every stored input, chunk by chunk, in order (a chunk
        never stored, of a cancelled map or a failed worker, is left out)."""
        chunk = 0
        while chunk < self._chunks:
            with platform_errors(self._config.url):
                answer = self._client.get_map_records(self.map_id, chunk)
            for stored in answer.chunks:
                yield from self._outcomes(stored.record)
            if not answer.chunks:
                chunk += 1  # this one was never stored: on to the next
            else:
                chunk = self._chunks if answer.next_chunk is None else answer.next_chunk

    def _outcomes(self, record: bytes) -> Iterator[tuple[int, R | None, BaseException | None]]:
        _, first, results = read_chunk_record(record)
        for offset, (result, payload) in enumerate(results):
            index = first + offset
            if result.status == "ok":
                yield index, cloudpickle.loads(payload), None
            else:
                where = f"{self.map_id}[{index}]"
                traceback = result.traceback or f"{result.message or 'an exception'}\n"
                yield index, None, remote_exception(where, traceback)

    def cancel(self) -> MapResponse:
        """Stop the map's workers; the chunks already stored stay readable."""
        with platform_errors(self._config.url):
            self._last = self._client.cancel_map(self.map_id)
        return self._last


def submit_map(
    function: Function[..., R],
    calls: Sequence[Call],
    *,
    concurrency: int,
    retries: int | None,
    config: Config,
) -> MapHandle[R]:
    """Submit ``function`` over ``calls`` as one map."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigurationError(f"concurrency={concurrency!r}: must be at least 1")
    if not calls:
        raise ConfigurationError("map: no inputs")
    resources = function.resources
    workers = min(concurrency, len(calls))
    chunk_items, chunks = chunk_calls(calls, workers)
    with platform_errors(config.url):
        submitted = platform_client(config).submit_map(
            dumps_program(function.fn),
            chunks,
            items=len(calls),
            chunk_items=chunk_items,
            vram_mb=resources.vram_mb,
            concurrency=workers,
            retries=resources.max_retries if retries is None else retries,
            gpu_count=resources.gpu_count,
            vendor=resources.vendor,
            timeout_seconds=resources.timeout_seconds,
            memory_mb=resources.memory_mb,
            cpu_millis=resources.cpu_millis,
            image=resources.image,
            pip=list(resources.pip) or None,
            function_name=function.name,
            idempotency_key=f"sdk-map-{uuid.uuid4().hex}",
        )
    return MapHandle(submitted, config)


def single_argument_calls(items: Iterable[Any]) -> list[Call]:
    """``f(item)`` for each item."""
    return [((item,), {}) for item in items]


def star_calls(items: Iterable[Iterable[Any]]) -> list[Call]:
    """``f(*item)`` for each item."""
    return [(tuple(item), {}) for item in items]
