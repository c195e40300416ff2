"""The GridweaveJob operations, each declared once: its flow and its ``/v1/crd`` route.

Adding an operation is one decorated method here (or in ``_endpoint_operations``) and its
test: the blocking, asyncio, module-level, in-memory and proxied clients and
kuberay-service's route are derived from it (:mod:`gridweave_controller._operation`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from gridweave_controller import _job_moves
from gridweave_controller._flow import (
    Create,
    Delete,
    Flow,
    FlowContext,
    Get,
    JobWait,
    List,
    Move,
    Pause,
)
from gridweave_controller._objects import (
    check_known,
    new_object,
    resource_fields,
    user_field_selector,
)
from gridweave_controller._operation import delete, get, operation, post
from gridweave_controller.models import Job, Vendor
from gridweave_controller.phases import JobPhase
from gridweave_controller.store import JOBS
from gridweave_controller.validation import (
    MAX_PRIORITY,
    MIN_PRIORITY,
    check_image,
    check_int,
    check_map_share,
    check_name,
    check_outcome,
    check_pip,
    check_placement,
    check_sha256,
    check_text,
    check_vendor,
    check_wall_seconds,
)

__all__ = ["DEFAULT_MAX_RETRIES", "DEFAULT_TIMEOUT_SECONDS", "JobOperations"]

DEFAULT_TIMEOUT_SECONDS = 3600
DEFAULT_MAX_RETRIES = 2


def _write(context: FlowContext, job_id: str, move: Move, known: Job | None = None) -> Flow[Job]:
    check_name(job_id, field="job_id")
    copy = None
    if known is not None:
        copy = check_known(known, Job, job_id, field="known").raw
    return Job.from_raw((yield from context.write_status(JOBS, job_id, move, copy)))


class JobOperations:
    """Create, read, list, delete and move GridweaveJobs."""

    @operation(post("/jobs", status_code=201))
    def create_job(
        self: FlowContext,
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
        args_ref: str | None = None,
        priority: int = 0,
        function_name: str | None = None,
        memory_mb: int | None = None,
        cpu_millis: int | None = None,
        image: str | None = None,
        pip: Sequence[str] | None = None,
        map_share: Mapping[str, int | str] | None = None,
        gpu_models: Sequence[str] | None = None,
    ) -> Flow[Job]:
        """Create a GridweaveJob in phase Pending (``image``: pinned, ``repo@sha256:...``;
        None: the node's default image; ``pip``: PEP 508 requirements of packages of the
        index, installed on the node before the function runs; ``map_share``: the job is
        worker ``worker`` of ``workers`` of map ``map_id`` over ``items`` inputs,
        ``chunk_items`` to a chunk, each input tried again ``retries`` times at most;
        ``gpu_models``: the GPU models that will do, any of them; None: any of ``vendor``)."""
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
            "priority": check_int(
                priority, field="priority", minimum=MIN_PRIORITY, maximum=MAX_PRIORITY
            ),
        }
        if args_ref is not None:
            spec["argsRef"] = check_text(args_ref, field="args_ref", max_length=2048)
        if function_name is not None:
            spec["functionName"] = check_text(function_name, field="function_name", max_length=253)
        spec.update(resource_fields(memory_mb, cpu_millis, gpu_models))
        if image is not None:
            spec["image"] = check_image(image)
        if pip is not None:
            requirements = check_pip(pip)
            if requirements:
                spec["pip"] = requirements
        if map_share is not None:
            spec["map"] = check_map_share(map_share)
        body = new_object("GridweaveJob", job_id, user_id, labels, spec)
        return Job.from_raw((yield from Create(self.namespace, JOBS, body).result()))

    @operation(get("/jobs/{job_id}"))
    def get_job(self: FlowContext, job_id: str) -> Flow[Job]:
        """Read one job."""
        check_name(job_id, field="job_id")
        return Job.from_raw((yield from Get(self.namespace, JOBS, job_id).result()))

    @operation(get("/jobs"))
    def list_jobs(
        self: FlowContext, label_selector: str | None = None, *, user_id: str | None = None
    ) -> Flow[list[Job]]:
        """List jobs, optionally by label selector and by user."""
        call = List(self.namespace, JOBS, label_selector, user_field_selector(user_id))
        return [Job.from_raw(raw) for raw in (yield from call.result())]

    @operation(delete("/jobs/{job_id}"))
    def delete_job(self: FlowContext, job_id: str) -> Flow[None]:
        """Delete one job."""
        check_name(job_id, field="job_id")
        yield from Delete(self.namespace, JOBS, job_id).result()

    @operation(post("/jobs/{job_id}/allocated"))
    def set_job_allocated(
        self: FlowContext,
        job_id: str,
        node: str,
        gpu_indices: Sequence[int],
        *,
        known: Job | None = None,
    ) -> Flow[Job]:
        """Pending -> Allocated on a node and its GPU indices (one per GPU of the spec).

        ``known``: the caller's copy of the job (an informer's); the write then needs no
        read while the copy is current (see ``FlowContext.write_status``).
        """
        indices = check_placement(node, gpu_indices)
        return (
            yield from _write(
                self,
                job_id,
                lambda status, spec, now: _job_moves.allocated(
                    job_id,
                    status,
                    node=node,
                    gpu_indices=indices,
                    gpu_count=int(spec.get("gpuCount") or 1),
                    now=now,
                ),
                known,
            )
        )

    @operation(post("/jobs/{job_id}/running"))
    def set_job_running(self: FlowContext, job_id: str, *, known: Job | None = None) -> Flow[Job]:
        """Allocated -> Running (``known``: as for :meth:`set_job_allocated`)."""
        return (
            yield from _write(
                self,
                job_id,
                lambda status, _spec, now: _job_moves.running(job_id, status, now=now),
                known,
            )
        )

    @operation(post("/jobs/{job_id}/completed"))
    def set_job_completed(
        self: FlowContext,
        job_id: str,
        wall_seconds: float,
        result_ref: str | None = None,
        result_sha256: str | None = None,
        *,
        known: Job | None = None,
    ) -> Flow[Job]:
        """Running -> Completed, billing ``ceil(wall_seconds)``; the result's URI and digest
        (``known``: as for :meth:`set_job_allocated`)."""
        check_wall_seconds(wall_seconds)
        if result_ref is not None:
            check_text(result_ref, field="result_ref", max_length=2048)
        if result_sha256 is not None:
            check_sha256(result_sha256, field="result_sha256")
        return (
            yield from _write(
                self,
                job_id,
                lambda status, _spec, now: _job_moves.completed(
                    job_id,
                    status,
                    wall_seconds=wall_seconds,
                    result_ref=result_ref,
                    result_sha256=result_sha256,
                    now=now,
                ),
                known,
            )
        )

    @operation(post("/jobs/{job_id}/failed"))
    def set_job_failed(
        self: FlowContext,
        job_id: str,
        reason: str,
        message: str = "",
        wall_seconds: float | None = None,
        *,
        known: Job | None = None,
    ) -> Flow[Job]:
        """Pending, Allocated or Running -> Failed with a CamelCase reason (``known``: as
        for :meth:`set_job_allocated`)."""
        check_outcome(reason, message, wall_seconds)
        return (
            yield from _write(
                self,
                job_id,
                lambda status, _spec, now: _job_moves.failed(
                    job_id,
                    status,
                    reason=reason,
                    message=message,
                    wall_seconds=wall_seconds,
                    now=now,
                ),
                known,
            )
        )

    @operation(post("/jobs/{job_id}/cancelled"))
    def set_job_cancelled(
        self: FlowContext, job_id: str, message: str = "", wall_seconds: float | None = None
    ) -> Flow[Job]:
        """Pending, Allocated or Running -> Cancelled."""
        check_outcome("Cancelled", message, wall_seconds)
        return (
            yield from _write(
                self,
                job_id,
                lambda status, _spec, now: _job_moves.cancelled(
                    job_id, status, message=message, wall_seconds=wall_seconds, now=now
                ),
            )
        )

    @operation(post("/jobs/{job_id}/timed-out"))
    def set_job_timed_out(
        self: FlowContext, job_id: str, message: str = "", wall_seconds: float | None = None
    ) -> Flow[Job]:
        """Running -> TimedOut."""
        check_outcome("TimedOut", message, wall_seconds)
        return (
            yield from _write(
                self,
                job_id,
                lambda status, _spec, now: _job_moves.timed_out(
                    job_id, status, message=message, wall_seconds=wall_seconds, now=now
                ),
            )
        )

    @operation(post("/jobs/{job_id}/pending"))
    def set_job_pending(
        self: FlowContext,
        job_id: str,
        reason: str,
        message: str = "",
        wall_seconds: float | None = None,
    ) -> Flow[Job]:
        """Allocated or Running -> Pending (requeue; ``attempts`` + 1); ``wall_seconds``: how
        long the lost attempt ran, billed with the job's last attempt."""
        check_outcome(reason, message, wall_seconds)
        return (
            yield from _write(
                self,
                job_id,
                lambda status, _spec, now: _job_moves.pending(
                    job_id,
                    status,
                    reason=reason,
                    message=message,
                    now=now,
                    wall_seconds=wall_seconds,
                ),
            )
        )

    @operation(post("/jobs/{job_id}/usage-reported"))
    def set_job_usage_reported(
        self: FlowContext, job_id: str, usage_id: int, *, known: Job | None = None
    ) -> Flow[Job]:
        """Mark a terminal job's usage as recorded (condition UsageReported, message the id;
        ``known``: as for :meth:`set_job_allocated`)."""
        check_int(usage_id, field="usage_id", minimum=1)
        return (
            yield from _write(
                self,
                job_id,
                lambda status, _spec, _now: _job_moves.usage_reported(
                    job_id, status, usage_id=usage_id
                ),
                known,
            )
        )

    @operation(post("/jobs/{job_id}/hold-released"))
    def set_job_hold_released(
        self: FlowContext, job_id: str, *, known: Job | None = None
    ) -> Flow[Job]:
        """Mark a terminal job that never held a GPU as settled with nothing billed: its hold
        was released (condition UsageReported, reason HoldReleased; ``known``: as for
        :meth:`set_job_allocated`)."""
        return (
            yield from _write(
                self,
                job_id,
                lambda status, _spec, _now: _job_moves.hold_released(job_id, status),
                known,
            )
        )

    @operation(None)  # composed on the client: it polls get_job
    def wait_for_job(
        self: FlowContext, job_id: str, phases: Iterable[JobPhase | str], timeout: float = 60.0
    ) -> Flow[Job]:
        """Poll until the job is in one of ``phases``; raise WaitTimedOut after ``timeout`` s."""
        check_name(job_id, field="job_id")
        wait = JobWait(job_id, phases, timeout)
        while True:
            job = Job.from_raw((yield from Get(self.namespace, JOBS, job_id).result()))
            if wait.reached(job.phase):
                return job
            yield Pause(wait.next_pause(job.phase))
