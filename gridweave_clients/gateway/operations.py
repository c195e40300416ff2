"""job_gateway's routes as typed operations (sans-IO), each declared once.

Submitting is not replayed once sent (a lost answer is read back with ``get_job``: a
second submission of the same id is a 409); the reads are.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import validate_call

from gridweave_clients._core import Operation, model_operation
from gridweave_clients.fields import UserId
from gridweave_clients.gateway.models import (
    InventoryResponse,
    JobId,
    JobListResponse,
    JobResponse,
    JobResultResponse,
    SubmitJobRequest,
    WaitSeconds,
)
from gridweave_controller.phases import JobPhase

__all__ = [
    "cancel_job",
    "get_inventory",
    "get_job",
    "get_job_result",
    "list_job_page",
    "list_jobs",
    "submit_job",
]


@validate_call
def submit_job(request: SubmitJobRequest) -> Operation[JobResponse]:
    """Create the job (Pending); 422 when no GPU could ever hold it, 409 for a taken id."""
    return model_operation("POST", "/v1/jobs", JobResponse, body=request)


@validate_call
def get_job(job_id: JobId, *, wait: WaitSeconds = 0) -> Operation[JobResponse]:
    """One job; ``wait`` > 0: answered once it has finished, or when the wait runs out."""
    params = {"wait": str(wait)} if wait else None
    path = f"/v1/jobs/{job_id}"
    return model_operation("GET", path, JobResponse, params=params, wait_seconds=wait)


@validate_call
def list_jobs(
    user_id: UserId | None = None, *, phase: JobPhase | None = None
) -> Operation[JobListResponse]:
    """The jobs of a user (or every user's), optionally in one phase."""
    params: dict[str, str] = {}
    if user_id is not None:
        params["user_id"] = user_id
    if phase is not None:
        params["phase"] = phase.value
    return model_operation("GET", "/v1/jobs", JobListResponse, params=params)


def list_job_page(
    user_id: UserId,
    *,
    limit: int,
    cursor: str | None = None,
    phases: Sequence[JobPhase] = (),
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    first_map_workers: bool = False,
) -> Operation[JobListResponse]:
    """One page of a user's jobs, newest first, from the gateway's informer cache
    (``first_map_workers``: only each map's worker 0, one job per map)."""
    params: dict[str, str] = {"user_id": user_id, "limit": str(limit)}
    if first_map_workers:
        params["first_map_workers"] = "true"
    if cursor is not None:
        params["cursor"] = cursor
    if phases:
        params["phases"] = ",".join(phase.value for phase in phases)
    if created_after is not None:
        params["created_after"] = created_after.isoformat()
    if created_before is not None:
        params["created_before"] = created_before.isoformat()
    return model_operation("GET", "/v1/jobs", JobListResponse, params=params)


@validate_call
def cancel_job(job_id: JobId) -> Operation[JobResponse]:
    """Cancel a job that has not finished (a running one is killed); 409 once finished."""
    return model_operation("POST", f"/v1/jobs/{job_id}/cancel", JobResponse, idempotent=True)


@validate_call
def get_job_result(job_id: JobId, *, wait: WaitSeconds = 0) -> Operation[JobResultResponse]:
    """Where the job's result, traceback and logs are; ``wait`` > 0: once it has finished,
    or when the wait runs out."""
    params = {"wait": str(wait)} if wait else None
    path = f"/v1/jobs/{job_id}/result"
    return model_operation("GET", path, JobResultResponse, params=params, wait_seconds=wait)


def get_inventory() -> Operation[InventoryResponse]:
    """The nodes and GPUs the scheduler places on, with the VRAM held on each GPU."""
    return model_operation("GET", "/v1/inventory", InventoryResponse)
