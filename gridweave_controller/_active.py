"""The one active :class:`CrdClient` of a module, whose methods are that module's functions.

``gridweave_controller.crd`` and the in-memory test transport expose the typed operations as
module-level functions acting on whichever client is installed. Each binds its functions to
one :class:`ActiveClient` (``create_job = _ACTIVE.create_job``), so the delegation is written
once here and the signatures cannot drift between them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal

from gridweave_controller.client import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_SECONDS, CrdClient
from gridweave_controller.models import Endpoint, Job, Vendor
from gridweave_controller.phases import JobPhase

__all__ = ["OPERATIONS", "ActiveClient"]

#: The typed operations every transport exposes, in the order of DESIGN.md.
OPERATIONS = (
    "create_job",
    "get_job",
    "list_jobs",
    "delete_job",
    "set_job_allocated",
    "set_job_running",
    "set_job_completed",
    "set_job_failed",
    "set_job_cancelled",
    "set_job_timed_out",
    "set_job_pending",
    "wait_for_job",
    "create_endpoint",
    "get_endpoint",
    "list_endpoints",
    "delete_endpoint",
    "set_endpoint_deploying",
    "set_endpoint_running",
    "set_endpoint_stopped",
    "set_endpoint_failed",
    "set_endpoint_health",
)


class ActiveClient:
    """Holds the client a module's functions use; built on first use if none was installed."""

    def __init__(
        self,
        make_default: Callable[[], CrdClient],
        on_replaced: Callable[[CrdClient], None] | None = None,
    ) -> None:
        self._make_default = make_default
        self._on_replaced = on_replaced
        self._client: CrdClient | None = None
        self._lock = threading.Lock()

    def install(self, client: CrdClient | None) -> None:
        """Make ``client`` the active one (None: build a default on next use)."""
        with self._lock:
            previous, self._client = self._client, client
        if previous is not None and previous is not client and self._on_replaced is not None:
            self._on_replaced(previous)

    @property
    def installed(self) -> CrdClient | None:
        """The client installed now, or None when the next use builds the default."""
        return self._client

    def current(self) -> CrdClient:
        """The active client; two threads' first calls build one default client, not two."""
        client = self._client
        if client is not None:
            return client
        with self._lock:
            if self._client is None:
                self._client = self._make_default()
            return self._client

    # -- jobs ---------------------------------------------------------------------------------

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
        return self.current().create_job(
            job_id,
            user_id,
            function_ref,
            vram_mb=vram_mb,
            gpu_count=gpu_count,
            vendor=vendor,
            owner=owner,
            timeout_seconds=timeout_seconds,
            max_retries=max_retries,
            labels=labels,
        )

    def get_job(self, job_id: str) -> Job:
        """Read one job."""
        return self.current().get_job(job_id)

    def list_jobs(
        self, label_selector: str | None = None, *, user_id: str | None = None
    ) -> list[Job]:
        """List jobs, optionally by label selector and by user."""
        return self.current().list_jobs(label_selector, user_id=user_id)

    def delete_job(self, job_id: str) -> None:
        """Delete one job."""
        self.current().delete_job(job_id)

    def set_job_allocated(self, job_id: str, node: str, gpu_indices: Sequence[int]) -> Job:
        """Pending -> Allocated on a node and its GPU indices."""
        return self.current().set_job_allocated(job_id, node, gpu_indices)

    def set_job_running(self, job_id: str) -> Job:
        """Allocated -> Running."""
        return self.current().set_job_running(job_id)

    def set_job_completed(
        self, job_id: str, wall_seconds: float, result_ref: str | None = None
    ) -> Job:
        """Running -> Completed, billing ``ceil(wall_seconds)``."""
        return self.current().set_job_completed(job_id, wall_seconds, result_ref)

    def set_job_failed(
        self, job_id: str, reason: str, message: str = "", wall_seconds: float | None = None
    ) -> Job:
        """Pending, Allocated or Running -> Failed with a CamelCase reason."""
        return self.current().set_job_failed(job_id, reason, message, wall_seconds)

    def set_job_cancelled(
        self, job_id: str, message: str = "", wall_seconds: float | None = None
    ) -> Job:
        """Pending, Allocated or Running -> Cancelled."""
        return self.current().set_job_cancelled(job_id, message, wall_seconds)

    def set_job_timed_out(
        self, job_id: str, message: str = "", wall_seconds: float | None = None
    ) -> Job:
        """Running -> TimedOut."""
        return self.current().set_job_timed_out(job_id, message, wall_seconds)

    def set_job_pending(self, job_id: str, reason: str, message: str = "") -> Job:
        """Allocated or Running -> Pending (requeue; ``attempts`` + 1)."""
        return self.current().set_job_pending(job_id, reason, message)

    def wait_for_job(
        self, job_id: str, phases: Iterable[JobPhase | str], timeout: float = 60.0
    ) -> Job:
        """Poll until the job is in one of ``phases``; raise WaitTimedOut after ``timeout`` s."""
        return self.current().wait_for_job(job_id, phases, timeout)

    # -- endpoints ----------------------------------------------------------------------------

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
        return self.current().create_endpoint(
            endpoint_id,
            user_id,
            vram_mb=vram_mb,
            model=model,
            image=image,
            mode=mode,
            gpu_count=gpu_count,
            vendor=vendor,
            replicas=replicas,
            micro_credits_per_second=micro_credits_per_second,
            micro_credits_per_request=micro_credits_per_request,
            labels=labels,
        )

    def get_endpoint(self, endpoint_id: str) -> Endpoint:
        """Read one endpoint."""
        return self.current().get_endpoint(endpoint_id)

    def list_endpoints(
        self, label_selector: str | None = None, *, user_id: str | None = None
    ) -> list[Endpoint]:
        """List endpoints, optionally by label selector and by user."""
        return self.current().list_endpoints(label_selector, user_id=user_id)

    def delete_endpoint(self, endpoint_id: str) -> None:
        """Delete one endpoint."""
        self.current().delete_endpoint(endpoint_id)

    def set_endpoint_deploying(
        self, endpoint_id: str, node: str, gpu_indices: Sequence[int]
    ) -> Endpoint:
        """Pending, Running, Stopped or Failed -> Deploying on a node and its GPUs."""
        return self.current().set_endpoint_deploying(endpoint_id, node, gpu_indices)

    def set_endpoint_running(self, endpoint_id: str, url: str) -> Endpoint:
        """Deploying -> Running at ``url``."""
        return self.current().set_endpoint_running(endpoint_id, url)

    def set_endpoint_stopped(self, endpoint_id: str, reason: str, message: str = "") -> Endpoint:
        """Pending, Deploying or Running -> Stopped."""
        return self.current().set_endpoint_stopped(endpoint_id, reason, message)

    def set_endpoint_failed(self, endpoint_id: str, reason: str, message: str = "") -> Endpoint:
        """Pending, Deploying or Running -> Failed."""
        return self.current().set_endpoint_failed(endpoint_id, reason, message)

    def set_endpoint_health(
        self, endpoint_id: str, healthy: bool, message: str = "", ready_replicas: int | None = None
    ) -> Endpoint:
        """Record a health probe: ``health``, ``readyReplicas`` and the Healthy condition."""
        return self.current().set_endpoint_health(endpoint_id, healthy, message, ready_replicas)
