"""The typed layer as sans-IO flows, written once for the blocking and the asyncio client.

Each typed operation is a generator (a *flow*): it checks its arguments, then yields the
store calls it needs (:class:`StoreCall`) and the pauses between retries (:class:`Pause`),
is sent each call's result (or thrown its error) and returns the typed object. A driver
performs the steps: :func:`run_flow` on a :class:`~gridweave_controller.store.RawStore`
for :class:`~gridweave_controller.client.CrdClient`, :func:`run_flow_async` on an
:class:`~gridweave_controller.store.AsyncRawStore` for
:class:`~gridweave_controller.aio.AsyncCrdClient`. Validation, the phase machines,
conditions and the read-modify-write loop therefore exist once, with no I/O in them (the
shape of httpx's auth flows).
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, TypeAlias, TypeVar

from gridweave_controller import _endpoint_moves, _job_moves
from gridweave_controller._arguments import (
    check_int,
    check_outcome,
    check_placement,
    check_vendor,
    object_labels,
    selector,
)
from gridweave_controller._status_change import (
    StatusChange,
    apply_change,
    check_text,
    status_merge_patch,
)
from gridweave_controller.conditions import check_message
from gridweave_controller.errors import Conflict, Invalid, WaitTimedOut
from gridweave_controller.models import Endpoint, Job, Vendor
from gridweave_controller.phases import JobPhase
from gridweave_controller.store import ENDPOINTS, GROUP, JOBS, VERSION, AsyncRawStore, RawStore
from gridweave_controller.validation import check_name, check_wall_seconds

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT_SECONDS",
    "MAX_WRITE_ATTEMPTS",
    "Flow",
    "JobWait",
    "Pause",
    "StoreCall",
    "TypedFlows",
    "run_flow",
    "run_flow_async",
]

DEFAULT_TIMEOUT_SECONDS = 3600
DEFAULT_MAX_RETRIES = 2
#: Read-modify-write attempts before a Conflict is given up on.
MAX_WRITE_ATTEMPTS = 8
_BACKOFF_BASE_S = 0.01
_BACKOFF_CAP_S = 0.5
_T = TypeVar("_T")
_Move = Callable[[Mapping[str, Any], int, datetime], StatusChange | None]
_Owned = TypeVar("_Owned", Job, Endpoint)


@dataclass(frozen=True, slots=True)
class StoreCall:
    """Call the store method ``verb`` with ``args``; the flow is sent its result."""

    verb: Literal["create", "get", "list", "delete", "patch_status"]
    args: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Pause:
    """Wait ``seconds`` before the next step (a retry's backoff, a poll's interval)."""

    seconds: float


#: A typed operation in flight: yields steps, is sent their results, returns ``_T``.
Flow: TypeAlias = Generator[StoreCall | Pause, Any, _T]


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
            reply = getattr(store, step.verb)(*step.args)
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
            reply = await getattr(store, step.verb)(*step.args)
        except Exception as exc:  # the flow decides (a Conflict is retried), else it re-raises
            failure = exc


def utc_now() -> datetime:
    """The clock the clients stamp status times with by default (UTC, aware)."""
    return datetime.now(UTC)


def _owned_by(items: list[_Owned], user_id: str | None) -> list[_Owned]:
    # The user label is an index, not an identity: a sanitized-and-hashed value could equal
    # another user's literal id, so the exact user id in the spec has the last word.
    if user_id is None:
        return items
    return [item for item in items if item.spec.user_id == user_id]


def _new_object(
    kind: str,
    name: str,
    user_id: str,
    labels: Mapping[str, str] | None,
    spec: dict[str, Any],
) -> dict[str, Any]:
    """A new GridweaveJob or GridweaveEndpoint: its user label beside the caller's labels."""
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": kind,
        "metadata": {"name": name, "labels": object_labels(user_id, labels)},
        "spec": spec,
    }


class JobWait:
    """The rule of every ``wait_for_job``: back off 20 ms to 1 s, give up after ``timeout``."""

    def __init__(self, job_id: str, phases: Iterable[JobPhase | str], timeout: float) -> None:
        self.job_id = job_id
        self.wanted = {JobPhase(p) for p in phases}
        self.timeout = timeout
        self._deadline = time.monotonic() + timeout
        self._interval = 0.02

    def reached(self, job: Job) -> bool:
        """Whether ``job`` is in one of the wanted phases."""
        return job.phase in self.wanted

    def next_pause(self, job: Job) -> float:
        """Seconds to wait before the next read; WaitTimedOut once the time is up."""
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            names = ", ".join(sorted(p.value for p in self.wanted))
            raise WaitTimedOut(
                f"job {self.job_id!r} is {job.phase.value}, not in {{{names}}}, "
                f"after {self.timeout}s"
            )
        pause = min(self._interval, remaining)
        self._interval = min(self._interval * 2, 1.0)
        return pause


def poll_job_until(
    read_job: Callable[[str], Job],
    job_id: str,
    phases: Iterable[JobPhase | str],
    timeout: float,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> Job:
    """``wait_for_job`` for a transport without flows (the proxied client): read, pause."""
    wait = JobWait(job_id, phases, timeout)
    while True:
        job = read_job(job_id)
        if wait.reached(job):
            return job
        sleep(wait.next_pause(job))


class TypedFlows:
    """Every typed operation as a flow, in one namespace (the clients drive them)."""

    def __init__(
        self,
        namespace: str,
        *,
        clock: Callable[[], datetime] = utc_now,
        max_write_attempts: int = MAX_WRITE_ATTEMPTS,
    ) -> None:
        self.namespace = check_name(namespace, field="namespace")
        self._clock = clock
        self._max_write_attempts = max_write_attempts

    # -- the read-modify-write loop ------------------------------------------------------

    def _write_status(self, plural: str, name: str, move: _Move) -> Flow[dict[str, Any]]:
        """GET, compute, merge-patch ``/status`` with the read's resourceVersion; retry Conflict."""
        for attempt in range(1, self._max_write_attempts + 1):
            raw: dict[str, Any] = yield StoreCall("get", (self.namespace, plural, name))
            status: dict[str, Any] = raw.get("status") or {}
            metadata = raw["metadata"]
            generation = int(metadata.get("generation") or 0)
            now = self._clock()
            change = move(status, generation, now)
            if change is None:
                return raw
            new_status = apply_change(status, change, generation=generation, now=now)
            patch = status_merge_patch(status, new_status, str(metadata["resourceVersion"]))
            try:
                written: dict[str, Any] = yield StoreCall(
                    "patch_status", (self.namespace, plural, name, patch)
                )
            except Conflict:
                if attempt == self._max_write_attempts:
                    raise
                ceiling = min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2**attempt)
                yield Pause(random.uniform(0, ceiling))
                continue
            return written
        raise AssertionError("unreachable")  # pragma: no cover

    def _job_write(self, job_id: str, move: _Move) -> Flow[Job]:
        check_name(job_id, field="job_id")
        return Job.from_raw((yield from self._write_status(JOBS, job_id, move)))

    def _endpoint_write(self, endpoint_id: str, move: _Move) -> Flow[Endpoint]:
        check_name(endpoint_id, field="endpoint_id")
        return Endpoint.from_raw((yield from self._write_status(ENDPOINTS, endpoint_id, move)))

    # -- jobs ------------------------------------------------------------------------------

    def create_job(
        self,
        job_id: str,
        user_id: str,
        function_ref: str,
        *,
        vram_mb: int,
        gpu_count: int = 1,
        vendor: Vendor = "any",
        owner: str | None = None,
        timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS,
        max_retries: int = DEFAULT_MAX_RETRIES,
        labels: Mapping[str, str] | None = None,
    ) -> Flow[Job]:
        """Create a GridweaveJob in phase Pending."""
        check_name(job_id, field="job_id")
        spec = {
            "userId": check_text(user_id, field="user_id", max_length=253),
            "functionRef": check_text(function_ref, field="function_ref", max_length=2048),
            "vramMb": check_int(vram_mb, field="vram_mb", minimum=1),
            "gpuCount": check_int(gpu_count, field="gpu_count", minimum=1, maximum=64),
            "vendor": check_vendor(vendor),
            "owner": check_text(owner or user_id, field="owner", max_length=253),
            "timeoutSeconds": check_int(timeout_seconds, field="timeout_seconds", minimum=1),
            "maxRetries": check_int(max_retries, field="max_retries", minimum=0, maximum=100),
        }
        body = _new_object("GridweaveJob", job_id, user_id, labels, spec)
        return Job.from_raw((yield StoreCall("create", (self.namespace, JOBS, body))))

    def get_job(self, job_id: str) -> Flow[Job]:
        """Read one job."""
        check_name(job_id, field="job_id")
        return Job.from_raw((yield StoreCall("get", (self.namespace, JOBS, job_id))))

    def list_jobs(
        self, label_selector: str | None = None, *, user_id: str | None = None
    ) -> Flow[list[Job]]:
        """List jobs, optionally by label selector and by user."""
        raws = yield StoreCall("list", (self.namespace, JOBS, selector(label_selector, user_id)))
        return _owned_by([Job.from_raw(raw) for raw in raws], user_id)

    def delete_job(self, job_id: str) -> Flow[None]:
        """Delete one job."""
        check_name(job_id, field="job_id")
        yield StoreCall("delete", (self.namespace, JOBS, job_id))

    def set_job_allocated(self, job_id: str, node: str, gpu_indices: Sequence[int]) -> Flow[Job]:
        """Pending -> Allocated on a node and its GPU indices."""
        indices = check_placement(node, gpu_indices)
        return (
            yield from self._job_write(
                job_id,
                lambda s, _g, now: _job_moves.allocated(
                    job_id, s, node=node, gpu_indices=indices, now=now
                ),
            )
        )

    def set_job_running(self, job_id: str) -> Flow[Job]:
        """Allocated -> Running."""
        return (
            yield from self._job_write(
                job_id, lambda s, _g, now: _job_moves.running(job_id, s, now=now)
            )
        )

    def set_job_completed(
        self, job_id: str, wall_seconds: float, result_ref: str | None = None
    ) -> Flow[Job]:
        """Running -> Completed, billing ``ceil(wall_seconds)``."""
        check_wall_seconds(wall_seconds)
        if result_ref is not None:
            check_text(result_ref, field="result_ref", max_length=2048)
        return (
            yield from self._job_write(
                job_id,
                lambda s, _g, now: _job_moves.completed(
                    job_id, s, wall_seconds=wall_seconds, result_ref=result_ref, now=now
                ),
            )
        )

    def set_job_failed(
        self, job_id: str, reason: str, message: str = "", wall_seconds: float | None = None
    ) -> Flow[Job]:
        """Pending, Allocated or Running -> Failed with a CamelCase reason."""
        check_outcome(reason, message, wall_seconds)
        return (
            yield from self._job_write(
                job_id,
                lambda s, _g, now: _job_moves.failed(
                    job_id, s, reason=reason, message=message, wall_seconds=wall_seconds, now=now
                ),
            )
        )

    def set_job_cancelled(
        self, job_id: str, message: str = "", wall_seconds: float | None = None
    ) -> Flow[Job]:
        """Pending, Allocated or Running -> Cancelled."""
        check_outcome("Cancelled", message, wall_seconds)
        return (
            yield from self._job_write(
                job_id,
                lambda s, _g, now: _job_moves.cancelled(
                    job_id, s, message=message, wall_seconds=wall_seconds, now=now
                ),
            )
        )

    def set_job_timed_out(
        self, job_id: str, message: str = "", wall_seconds: float | None = None
    ) -> Flow[Job]:
        """Running -> TimedOut."""
        check_outcome("TimedOut", message, wall_seconds)
        return (
            yield from self._job_write(
                job_id,
                lambda s, _g, now: _job_moves.timed_out(
                    job_id, s, message=message, wall_seconds=wall_seconds, now=now
                ),
            )
        )

    def set_job_pending(self, job_id: str, reason: str, message: str = "") -> Flow[Job]:
        """Allocated or Running -> Pending (requeue; ``attempts`` + 1)."""
        check_outcome(reason, message, None)
        return (
            yield from self._job_write(
                job_id,
                lambda s, _g, now: _job_moves.pending(
                    job_id, s, reason=reason, message=message, now=now
                ),
            )
        )

    def wait_for_job(
        self, job_id: str, phases: Iterable[JobPhase | str], timeout: float = 60.0
    ) -> Flow[Job]:
        """Poll until the job is in one of ``phases``; raise WaitTimedOut after ``timeout`` s."""
        check_name(job_id, field="job_id")
        wait = JobWait(job_id, phases, timeout)
        while True:
            job = yield from self.get_job(job_id)
            if wait.reached(job):
                return job
            yield Pause(wait.next_pause(job))

    # -- endpoints ---------------------------------------------------------------------

    def create_endpoint(
        self,
        endpoint_id: str,
        user_id: str,
        *,
        vram_mb: int,
        model: str | None = None,
        image: str | None = None,
        mode: Literal["vllm", "custom"] | None = None,
        gpu_count: int = 1,
        vendor: Vendor = "any",
        replicas: int = 1,
        micro_credits_per_second: int = 0,
        micro_credits_per_request: int = 0,
        labels: Mapping[str, str] | None = None,
    ) -> Flow[Endpoint]:
        """Create a GridweaveEndpoint in phase Pending (``mode`` defaults from model/image)."""
        check_name(endpoint_id, field="endpoint_id")
        if model is None and image is None:
            raise Invalid("one of model or image is required", field="model")
        resolved_mode = mode or ("vllm" if model is not None else "custom")
        if resolved_mode not in ("vllm", "custom"):
            raise Invalid(f"mode must be vllm or custom, not {mode!r}", field="mode")
        spec: dict[str, Any] = {
            "userId": check_text(user_id, field="user_id", max_length=253),
            "mode": resolved_mode,
            "vramMb": check_int(vram_mb, field="vram_mb", minimum=1),
            "gpuCount": check_int(gpu_count, field="gpu_count", minimum=1, maximum=64),
            "vendor": check_vendor(vendor),
            "replicas": check_int(replicas, field="replicas", minimum=0, maximum=64),
            "pricing": {
                "microCreditsPerSecond": check_int(
                    micro_credits_per_second, field="micro_credits_per_second", minimum=0
                ),
                "microCreditsPerRequest": check_int(
                    micro_credits_per_request, field="micro_credits_per_request", minimum=0
                ),
            },
        }
        if model is not None:
            spec["model"] = check_text(model, field="model", max_length=512)
        if image is not None:
            spec["image"] = check_text(image, field="image", max_length=1024)
        body = _new_object("GridweaveEndpoint", endpoint_id, user_id, labels, spec)
        return Endpoint.from_raw((yield StoreCall("create", (self.namespace, ENDPOINTS, body))))

    def get_endpoint(self, endpoint_id: str) -> Flow[Endpoint]:
        """Read one endpoint."""
        check_name(endpoint_id, field="endpoint_id")
        return Endpoint.from_raw((yield StoreCall("get", (self.namespace, ENDPOINTS, endpoint_id))))

    def list_endpoints(
        self, label_selector: str | None = None, *, user_id: str | None = None
    ) -> Flow[list[Endpoint]]:
        """List endpoints, optionally by label selector and by user."""
        raws = yield StoreCall(
            "list", (self.namespace, ENDPOINTS, selector(label_selector, user_id))
        )
        return _owned_by([Endpoint.from_raw(raw) for raw in raws], user_id)

    def delete_endpoint(self, endpoint_id: str) -> Flow[None]:
        """Delete one endpoint."""
        check_name(endpoint_id, field="endpoint_id")
        yield StoreCall("delete", (self.namespace, ENDPOINTS, endpoint_id))

    def set_endpoint_deploying(
        self, endpoint_id: str, node: str, gpu_indices: Sequence[int]
    ) -> Flow[Endpoint]:
        """Pending, Running, Stopped or Failed -> Deploying on a node and its GPUs."""
        indices = check_placement(node, gpu_indices)
        return (
            yield from self._endpoint_write(
                endpoint_id,
                lambda s, _g, now: _endpoint_moves.deploying(
                    endpoint_id, s, node=node, gpu_indices=indices, now=now
                ),
            )
        )

    def set_endpoint_running(self, endpoint_id: str, url: str) -> Flow[Endpoint]:
        """Deploying -> Running at ``url``."""
        check_text(url, field="url", max_length=2048)
        return (
            yield from self._endpoint_write(
                endpoint_id,
                lambda s, _g, now: _endpoint_moves.running(endpoint_id, s, url=url, now=now),
            )
        )

    def set_endpoint_stopped(
        self, endpoint_id: str, reason: str, message: str = ""
    ) -> Flow[Endpoint]:
        """Pending, Deploying or Running -> Stopped."""
        check_outcome(reason, message, None)
        return (
            yield from self._endpoint_write(
                endpoint_id,
                lambda s, _g, now: _endpoint_moves.stopped(
                    endpoint_id, s, reason=reason, message=message, now=now
                ),
            )
        )

    def set_endpoint_failed(
        self, endpoint_id: str, reason: str, message: str = ""
    ) -> Flow[Endpoint]:
        """Pending, Deploying or Running -> Failed."""
        check_outcome(reason, message, None)
        return (
            yield from self._endpoint_write(
                endpoint_id,
                lambda s, _g, now: _endpoint_moves.failed(
                    endpoint_id, s, reason=reason, message=message, now=now
                ),
            )
        )

    def set_endpoint_health(
        self,
        endpoint_id: str,
        healthy: bool,
        message: str = "",
        ready_replicas: int | None = None,
    ) -> Flow[Endpoint]:
        """Record a health probe: ``health``, ``readyReplicas`` and the Healthy condition."""
        check_message(message)
        if ready_replicas is not None:
            check_int(ready_replicas, field="ready_replicas", minimum=0)
        return (
            yield from self._endpoint_write(
                endpoint_id,
                lambda s, _g, _now: _endpoint_moves.health(
                    endpoint_id, s, healthy=healthy, message=message, ready_replicas=ready_replicas
                ),
            )
        )
