"""The typed layer, written once over any :class:`~gridweave_controller.store.RawStore`.

Validation before any request, the phase machines, conditions and the read-modify-write
loop live here; a transport only supplies the store. :mod:`gridweave_controller.crd`
exposes one :class:`CrdClient` as module-level functions.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

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
from gridweave_controller.store import ENDPOINTS, GROUP, JOBS, VERSION, RawStore
from gridweave_controller.validation import (
    check_name,
    check_wall_seconds,
)

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT_SECONDS",
    "CrdClient",
    "poll_job_until",
]

DEFAULT_TIMEOUT_SECONDS = 3600
DEFAULT_MAX_RETRIES = 2
#: Read-modify-write attempts before a Conflict is given up on.
MAX_WRITE_ATTEMPTS = 8
_BACKOFF_BASE_S = 0.01
_BACKOFF_CAP_S = 0.5
_T = TypeVar("_T")
_Move = Callable[[Mapping[str, Any], int, datetime], StatusChange | None]


def _utc_now() -> datetime:
    return datetime.now(UTC)


_Owned = TypeVar("_Owned", Job, Endpoint)


def _owned_by(items: list[_Owned], user_id: str | None) -> list[_Owned]:
    # The user label is an index, not an identity: a sanitized-and-hashed value could equal
    # another user's literal id, so the exact user id in the spec has the last word.
    if user_id is None:
        return items
    return [item for item in items if item.spec.user_id == user_id]


def poll_job_until(
    read_job: Callable[[str], Job],
    job_id: str,
    phases: Iterable[JobPhase | str],
    timeout: float,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> Job:
    """Read the job (backing off 20 ms to 1 s) until it is in one of ``phases``.

    Every transport's ``wait_for_job``; raises WaitTimedOut after ``timeout`` seconds.
    """
    wanted = {JobPhase(p) for p in phases}
    deadline = time.monotonic() + timeout
    interval = 0.02
    while True:
        job = read_job(job_id)
        if job.phase in wanted:
            return job
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            names = ", ".join(sorted(p.value for p in wanted))
            raise WaitTimedOut(
                f"job {job_id!r} is {job.phase.value}, not in {{{names}}}, after {timeout}s"
            )
        sleep(min(interval, remaining))
        interval = min(interval * 2, 1.0)


class CrdClient:
    """Typed GridweaveJob and GridweaveEndpoint operations in one namespace of one store."""

    def __init__(
        self,
        store: RawStore,
        namespace: str,
        *,
        clock: Callable[[], datetime] = _utc_now,
        sleep: Callable[[float], None] = time.sleep,
        max_write_attempts: int = MAX_WRITE_ATTEMPTS,
    ) -> None:
        self.store = store
        self.namespace = check_name(namespace, field="namespace")
        self._clock = clock
        self._sleep = sleep
        self._max_write_attempts = max_write_attempts

    # -- the read-modify-write loop ------------------------------------------------------

    def _write_status(self, plural: str, name: str, move: _Move) -> dict[str, Any]:
        """GET, compute, merge-patch ``/status`` with the read's resourceVersion; retry Conflict."""
        for attempt in range(1, self._max_write_attempts + 1):
            raw = self.store.get(self.namespace, plural, name)
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
                return self.store.patch_status(self.namespace, plural, name, patch)
            except Conflict:
                if attempt == self._max_write_attempts:
                    raise
                ceiling = min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2**attempt)
                self._sleep(random.uniform(0, ceiling))
        raise AssertionError("unreachable")  # pragma: no cover

    def _job_write(self, job_id: str, move: _Move) -> Job:
        check_name(job_id, field="job_id")
        return Job.from_raw(self._write_status(JOBS, job_id, move))

    def _endpoint_write(self, endpoint_id: str, move: _Move) -> Endpoint:
        check_name(endpoint_id, field="endpoint_id")
        return Endpoint.from_raw(self._write_status(ENDPOINTS, endpoint_id, move))

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
    ) -> Job:
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
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "GridweaveJob",
            "metadata": {"name": job_id, "labels": object_labels(user_id, labels)},
            "spec": spec,
        }
        return Job.from_raw(self.store.create(self.namespace, JOBS, body))

    def get_job(self, job_id: str) -> Job:
        """Read one job."""
        check_name(job_id, field="job_id")
        return Job.from_raw(self.store.get(self.namespace, JOBS, job_id))

    def list_jobs(
        self, label_selector: str | None = None, *, user_id: str | None = None
    ) -> list[Job]:
        """List jobs, optionally by label selector and by user."""
        raws = self.store.list(self.namespace, JOBS, selector(label_selector, user_id))
        return _owned_by([Job.from_raw(raw) for raw in raws], user_id)

    def delete_job(self, job_id: str) -> None:
        """Delete one job."""
        check_name(job_id, field="job_id")
        self.store.delete(self.namespace, JOBS, job_id)

    def set_job_allocated(self, job_id: str, node: str, gpu_indices: Sequence[int]) -> Job:
        """Pending -> Allocated on a node and its GPU indices."""
        indices = check_placement(node, gpu_indices)
        return self._job_write(
            job_id,
            lambda s, _g, now: _job_moves.allocated(
                job_id, s, node=node, gpu_indices=indices, now=now
            ),
        )

    def set_job_running(self, job_id: str) -> Job:
        """Allocated -> Running."""
        return self._job_write(job_id, lambda s, _g, now: _job_moves.running(job_id, s, now=now))

    def set_job_completed(
        self, job_id: str, wall_seconds: float, result_ref: str | None = None
    ) -> Job:
        """Running -> Completed, billing ``ceil(wall_seconds)``."""
        check_wall_seconds(wall_seconds)
        if result_ref is not None:
            check_text(result_ref, field="result_ref", max_length=2048)
        return self._job_write(
            job_id,
            lambda s, _g, now: _job_moves.completed(
                job_id, s, wall_seconds=wall_seconds, result_ref=result_ref, now=now
            ),
        )

    def set_job_failed(
        self, job_id: str, reason: str, message: str = "", wall_seconds: float | None = None
    ) -> Job:
        """Pending, Allocated or Running -> Failed with a CamelCase reason."""
        check_outcome(reason, message, wall_seconds)
        return self._job_write(
            job_id,
            lambda s, _g, now: _job_moves.failed(
                job_id, s, reason=reason, message=message, wall_seconds=wall_seconds, now=now
            ),
        )

    def set_job_cancelled(
        self, job_id: str, message: str = "", wall_seconds: float | None = None
    ) -> Job:
        """Pending, Allocated or Running -> Cancelled."""
        check_outcome("Cancelled", message, wall_seconds)
        return self._job_write(
            job_id,
            lambda s, _g, now: _job_moves.cancelled(
                job_id, s, message=message, wall_seconds=wall_seconds, now=now
            ),
        )

    def set_job_timed_out(
        self, job_id: str, message: str = "", wall_seconds: float | None = None
    ) -> Job:
        """Running -> TimedOut."""
        check_outcome("TimedOut", message, wall_seconds)
        return self._job_write(
            job_id,
            lambda s, _g, now: _job_moves.timed_out(
                job_id, s, message=message, wall_seconds=wall_seconds, now=now
            ),
        )

    def set_job_pending(self, job_id: str, reason: str, message: str = "") -> Job:
        """Allocated or Running -> Pending (requeue; ``attempts`` + 1)."""
        check_outcome(reason, message, None)
        return self._job_write(
            job_id,
            lambda s, _g, now: _job_moves.pending(
                job_id, s, reason=reason, message=message, now=now
            ),
        )

    def wait_for_job(
        self, job_id: str, phases: Iterable[JobPhase | str], timeout: float = 60.0
    ) -> Job:
        """Poll until the job is in one of ``phases``; raise WaitTimedOut after ``timeout`` s."""
        return poll_job_until(self.get_job, job_id, phases, timeout, sleep=self._sleep)

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
    ) -> Endpoint:
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
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "GridweaveEndpoint",
            "metadata": {"name": endpoint_id, "labels": object_labels(user_id, labels)},
            "spec": spec,
        }
        return Endpoint.from_raw(self.store.create(self.namespace, ENDPOINTS, body))

    def get_endpoint(self, endpoint_id: str) -> Endpoint:
        """Read one endpoint."""
        check_name(endpoint_id, field="endpoint_id")
        return Endpoint.from_raw(self.store.get(self.namespace, ENDPOINTS, endpoint_id))

    def list_endpoints(
        self, label_selector: str | None = None, *, user_id: str | None = None
    ) -> list[Endpoint]:
        """List endpoints, optionally by label selector and by user."""
        raws = self.store.list(self.namespace, ENDPOINTS, selector(label_selector, user_id))
        return _owned_by([Endpoint.from_raw(raw) for raw in raws], user_id)

    def delete_endpoint(self, endpoint_id: str) -> None:
        """Delete one endpoint."""
        check_name(endpoint_id, field="endpoint_id")
        self.store.delete(self.namespace, ENDPOINTS, endpoint_id)

    def set_endpoint_deploying(
        self, endpoint_id: str, node: str, gpu_indices: Sequence[int]
    ) -> Endpoint:
        """Pending, Running, Stopped or Failed -> Deploying on a node and its GPUs."""
        indices = check_placement(node, gpu_indices)
        return self._endpoint_write(
            endpoint_id,
            lambda s, _g, now: _endpoint_moves.deploying(
                endpoint_id, s, node=node, gpu_indices=indices, now=now
            ),
        )

    def set_endpoint_running(self, endpoint_id: str, url: str) -> Endpoint:
        """Deploying -> Running at ``url``."""
        check_text(url, field="url", max_length=2048)
        return self._endpoint_write(
            endpoint_id,
            lambda s, _g, now: _endpoint_moves.running(endpoint_id, s, url=url, now=now),
        )

    def set_endpoint_stopped(self, endpoint_id: str, reason: str, message: str = "") -> Endpoint:
        """Pending, Deploying or Running -> Stopped."""
        check_outcome(reason, message, None)
        return self._endpoint_write(
            endpoint_id,
            lambda s, _g, now: _endpoint_moves.stopped(
                endpoint_id, s, reason=reason, message=message, now=now
            ),
        )

    def set_endpoint_failed(self, endpoint_id: str, reason: str, message: str = "") -> Endpoint:
        """Pending, Deploying or Running -> Failed."""
        check_outcome(reason, message, None)
        return self._endpoint_write(
            endpoint_id,
            lambda s, _g, now: _endpoint_moves.failed(
                endpoint_id, s, reason=reason, message=message, now=now
            ),
        )

    def set_endpoint_health(
        self,
        endpoint_id: str,
        healthy: bool,
        message: str = "",
        ready_replicas: int | None = None,
    ) -> Endpoint:
        """Record a health probe: ``health``, ``readyReplicas`` and the Healthy condition."""
        check_message(message)
        if ready_replicas is not None:
            check_int(ready_replicas, field="ready_replicas", minimum=0)
        return self._endpoint_write(
            endpoint_id,
            lambda s, _g, _now: _endpoint_moves.health(
                endpoint_id, s, healthy=healthy, message=message, ready_replicas=ready_replicas
            ),
        )
