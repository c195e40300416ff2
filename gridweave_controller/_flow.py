"""Sans-IO flows: the steps a typed operation takes, and the drivers that perform them.

A *flow* is a generator: it yields the store calls it needs (:class:`StoreCall`) and the
pauses between retries (:class:`Pause`), is sent each call's result (or thrown its error)
and returns the typed object. :func:`run_flow` performs the steps on a blocking
:class:`~gridweave_controller.store.RawStore`, :func:`run_flow_async` on an
:class:`~gridweave_controller.store.AsyncRawStore`, so validation, the phase machines,
conditions and the read-modify-write loop exist once, with no I/O in them (the shape of
httpx's auth flows). Each store call is a small typed request whose :meth:`StoreCall.on`
calls the store's typed method: no verb strings, no ``Any`` results inside a flow
(``raw = yield from Get(...).result()`` is a ``dict``).

:class:`FlowContext` is what every operation's flow runs against: the namespace, the clock
and the one read-modify-write loop of every status setter.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, TypeAlias, TypeVar

from gridweave_controller._status_change import StatusChange, apply_change, status_merge_patch
from gridweave_controller.errors import Conflict, CrdError, WaitTimedOut
from gridweave_controller.phases import JobPhase
from gridweave_controller.store import AsyncRawStore, RawStore
from gridweave_controller.validation import check_name

__all__ = [
    "MAX_WRITE_ATTEMPTS",
    "Create",
    "Delete",
    "Flow",
    "FlowContext",
    "Get",
    "JobWait",
    "List",
    "Move",
    "PatchStatus",
    "Pause",
    "StoreCall",
    "run_flow",
    "run_flow_async",
    "utc_now",
]

#: Read-modify-write attempts before a Conflict is given up on.
MAX_WRITE_ATTEMPTS = 8
_BACKOFF_BASE_S = 0.01
_BACKOFF_CAP_S = 0.5
_T = TypeVar("_T")
_R = TypeVar("_R")
RawObject: TypeAlias = dict[str, Any]
#: A status move: (current status, spec, now) -> the change, or None for a no-op.
Move: TypeAlias = Callable[[Mapping[str, Any], Mapping[str, Any], datetime], StatusChange | None]


class StoreCall(Generic[_R]):
    """One call of a store's typed method; the flow is sent its result (an ``_R``)."""

    __slots__ = ()

    def on(self, store: RawStore) -> _R:
        """Perform the call on a blocking store."""
        raise NotImplementedError

    async def on_async(self, store: AsyncRawStore) -> _R:
        """Perform the call on an asyncio store."""
        raise NotImplementedError

    def result(self) -> Generator[StoreCall[_R], Any, _R]:
        """``yield from`` this inside a flow: the call's result, typed."""
        reply: _R = yield self
        return reply


@dataclass(frozen=True, slots=True)
class Create(StoreCall[RawObject]):
    """``store.create``."""

    namespace: str
    plural: str
    body: RawObject

    def on(self, store: RawStore) -> RawObject:
        """Create the object."""
        return store.create(self.namespace, self.plural, self.body)

    async def on_async(self, store: AsyncRawStore) -> RawObject:
        """Create the object."""
        return await store.create(self.namespace, self.plural, self.body)


@dataclass(frozen=True, slots=True)
class Get(StoreCall[RawObject]):
    """``store.get``."""

    namespace: str
    plural: str
    name: str

    def on(self, store: RawStore) -> RawObject:
        """Read one object."""
        return store.get(self.namespace, self.plural, self.name)

    async def on_async(self, store: AsyncRawStore) -> RawObject:
        """Read one object."""
        return await store.get(self.namespace, self.plural, self.name)


@dataclass(frozen=True, slots=True)
class List(StoreCall[list[RawObject]]):
    """``store.list``."""

    namespace: str
    plural: str
    label_selector: str | None
    field_selector: str | None = None

    def on(self, store: RawStore) -> list[RawObject]:
        """List the matching objects."""
        return store.list(
            self.namespace, self.plural, self.label_selector, field_selector=self.field_selector
        )

    async def on_async(self, store: AsyncRawStore) -> list[RawObject]:
        """List the matching objects."""
        return await store.list(
            self.namespace, self.plural, self.label_selector, field_selector=self.field_selector
        )


@dataclass(frozen=True, slots=True)
class Delete(StoreCall[None]):
    """``store.delete``."""

    namespace: str
    plural: str
    name: str

    def on(self, store: RawStore) -> None:
        """Delete one object."""
        store.delete(self.namespace, self.plural, self.name)

    async def on_async(self, store: AsyncRawStore) -> None:
        """Delete one object."""
        await store.delete(self.namespace, self.plural, self.name)


@dataclass(frozen=True, slots=True)
class PatchStatus(StoreCall[RawObject]):
    """``store.patch_status``."""

    namespace: str
    plural: str
    name: str
    patch: RawObject

    def on(self, store: RawStore) -> RawObject:
        """Merge-patch the status subresource."""
        return store.patch_status(self.namespace, self.plural, self.name, self.patch)

    async def on_async(self, store: AsyncRawStore) -> RawObject:
        """Merge-patch the status subresource."""
        return await store.patch_status(self.namespace, self.plural, self.name, self.patch)


@dataclass(frozen=True, slots=True)
class Pause:
    """Wait ``seconds`` before the next step (a retry's backoff, a poll's interval)."""

    seconds: float


#: A typed operation in flight: yields steps, is sent their results, returns ``_T``.
Flow: TypeAlias = Generator[StoreCall[Any] | Pause, Any, _T]


def run_flow(flow: Flow[_T], store: RawStore, sleep: Callable[[float], None]) -> _T:
    """Perform ``flow``'s steps on a blocking store; its return value."""
    reply: Any = None
    failure: Exception | None = None
    while True:
        try:
            step = flow.send(reply) if failure is None else flow.throw(failure)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        finally:  # an error raised on from here must not keep this frame (and itself) alive
            reply, failure = None, None
        if isinstance(step, Pause):
            sleep(step.seconds)
            continue
        try:
            reply = step.on(store)
        except Exception as exc:  # the flow decides (a Conflict is retried), else it re-raises
            failure = exc


async def run_flow_async(
    flow: Flow[_T], store: AsyncRawStore, sleep: Callable[[float], Awaitable[None]]
) -> _T:
    """Perform ``flow``'s steps on an asyncio store; its return value."""
    reply: Any = None
    failure: Exception | None = None
    while True:
        try:
            step = flow.send(reply) if failure is None else flow.throw(failure)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        finally:  # an error raised on from here must not keep this frame (and itself) alive
            reply, failure = None, None
        if isinstance(step, Pause):
            await sleep(step.seconds)
            continue
        try:
            reply = await step.on_async(store)
        except Exception as exc:  # the flow decides (a Conflict is retried), else it re-raises
            failure = exc


def utc_now() -> datetime:
    """The clock the clients stamp status times with by default (UTC, aware)."""
    return datetime.now(UTC)


class FlowContext:
    """What the flows of one client run against: its namespace, clock and write loop."""

    def __init__(
        self,
        namespace: str,
        *,
        clock: Callable[[], datetime] = utc_now,
        max_write_attempts: int = MAX_WRITE_ATTEMPTS,
    ) -> None:
        self.namespace = check_name(namespace, field="namespace")
        self.clock = clock
        self.max_write_attempts = max_write_attempts

    def write_status(
        self, plural: str, name: str, move: Move, known: RawObject | None = None
    ) -> Flow[RawObject]:
        """GET, compute, merge-patch ``/status`` with the read's resourceVersion; retry Conflict.

        ``move`` turns the current status into a :class:`StatusChange` (None: nothing to
        write, the object is returned as read). ``known``, a copy of the object the caller
        already holds (an informer's), saves the first GET: the patch is computed from it
        and guarded by its resourceVersion. It can only save the read, never decide: when
        the copy is stale (Conflict), or the move from it would write nothing or is refused,
        the object is read and the move computed again from what the store holds.
        """
        if known is not None:
            written = yield from self._write_from_copy(plural, name, move, known)
            if written is not None:
                return written
        for attempt in range(1, self.max_write_attempts + 1):
            raw = yield from Get(self.namespace, plural, name).result()
            patch = _status_patch(raw, move, self.clock())
            if patch is None:
                return raw
            try:
                return (yield from PatchStatus(self.namespace, plural, name, patch).result())
            except Conflict:
                if attempt == self.max_write_attempts:
                    raise
                ceiling = min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2**attempt)
                yield Pause(random.uniform(0, ceiling))
        raise AssertionError("unreachable")  # pragma: no cover

    def _write_from_copy(
        self, plural: str, name: str, move: Move, known: RawObject
    ) -> Flow[RawObject | None]:
        """One PATCH computed from ``known``; None when the store must be read instead."""
        try:
            patch = _status_patch(known, move, self.clock())
        except CrdError:  # refused from a copy that may be old: the fresh read decides
            return None
        if patch is None:  # nothing to write, says the copy: confirmed by a fresh read
            return None
        try:
            return (yield from PatchStatus(self.namespace, plural, name, patch).result())
        except Conflict:  # the copy was stale (not a race lost after a read: no backoff)
            return None


def _status_patch(raw: RawObject, move: Move, now: datetime) -> RawObject | None:
    """The merge patch ``move`` makes of ``raw``'s status, guarded by its resourceVersion."""
    status: dict[str, Any] = raw.get("status") or {}
    metadata = raw["metadata"]
    change = move(status, raw.get("spec") or {}, now)
    if change is None:
        return None
    generation = int(metadata.get("generation") or 0)
    new_status = apply_change(status, change, generation=generation, now=now)
    return status_merge_patch(status, new_status, str(metadata["resourceVersion"]))


class JobWait:
    """The rule of every ``wait_for_job``: back off 20 ms to 1 s, give up after ``timeout``."""

    def __init__(self, job_id: str, phases: Iterable[JobPhase | str], timeout: float) -> None:
        self.job_id = job_id
        self.wanted = {JobPhase(p) for p in phases}
        self.timeout = timeout
        self._deadline = time.monotonic() + timeout
        self._interval = 0.02

    def reached(self, phase: JobPhase) -> bool:
        """Whether ``phase`` is one of the wanted phases."""
        return phase in self.wanted

    def next_pause(self, phase: JobPhase) -> float:
        """Seconds to wait before the next read; WaitTimedOut once the time is up."""
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            names = ", ".join(sorted(p.value for p in self.wanted))
            raise WaitTimedOut(
                f"job {self.job_id!r} is {phase.value}, not in {{{names}}}, after {self.timeout}s"
            )
        pause = min(self._interval, remaining)
        self._interval = min(self._interval * 2, 1.0)
        return pause
