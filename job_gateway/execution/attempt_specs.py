"""What an Allocated job's attempt runs with: the :class:`AttemptSpec` its worker gets (the
function and arguments, the node's sandbox, the owner and the placed GPUs, the image with its
owner's pull token, pip= requirements, memory and CPU)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gridweave_clients.gateway.reasons import IMAGE_PULL_FAILED, IMAGE_REFUSED
from gridweave_controller.models import Job
from gridweave_runtime.storage import StorageConfig
from job_gateway.execution.devices import placed_vendor, visible_devices
from job_gateway.execution.image_pulls import ImageRefusedToOwner, PullTokens
from job_gateway.execution.worker import AttemptSpec
from job_gateway.inventory import Inventory
from job_gateway.sandbox.attempt import SandboxedJob
from job_gateway.sandbox.settings import SandboxConfig

__all__ = ["AttemptRefused", "AttemptSpecs"]


class AttemptRefused(Exception):
    """The attempt cannot run: ``reason`` (ImageRefused, ImagePullFailed) and a message."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class AttemptSpecs:
    """Builds each attempt's :class:`AttemptSpec`; ``pull_tokens`` None: a job naming its
    own image is refused (ImagePullFailed)."""

    storage: StorageConfig
    sandbox: SandboxConfig
    inventory: Callable[[], Inventory]
    pull_tokens: PullTokens | None = None

    async def for_attempt(self, job: Job, attempt: int) -> AttemptSpec:
        """The spec of ``job``'s attempt ``attempt`` on its node.

        Raises:
            AttemptRefused: its image may not be pulled by its owner, or this gateway
                pulls no images.
        """
        image = None
        if job.spec.image is not None:
            if self.pull_tokens is None:
                raise AttemptRefused(
                    IMAGE_PULL_FAILED,
                    "this gateway pulls no images: it has no service token to ask the "
                    "platform for the owner's pull token (GRIDWEAVE_SERVICE_TOKEN)",
                )
            try:
                image = await self.pull_tokens.pull_for(job.spec.user_id, job.spec.image)
            except ImageRefusedToOwner as refused:
                raise AttemptRefused(IMAGE_REFUSED, str(refused)) from None
        return AttemptSpec(
            job_id=job.name,
            attempt=attempt,
            function_ref=job.spec.function_ref,
            args_ref=job.spec.args_ref,
            storage=self.storage,
            sandbox=self.sandbox,
            job=self.sandboxed_job(job),
            image=image,
            pip=tuple(job.spec.pip or ()),
            map=job.spec.map,
        )

    def environment(self, job: Job) -> dict[str, str]:
        """The GPU visibility variables of the job's slice."""
        assert job.status.node is not None
        return visible_devices(
            self.inventory(), job.status.node, job.status.gpu_indices, job.spec.vendor
        )

    def sandboxed_job(self, job: Job) -> SandboxedJob:
        """Who the attempt's container belongs to, its GPUs, memory and CPU."""
        assert job.status.node is not None
        indices = tuple(job.status.gpu_indices)
        vendor = placed_vendor(self.inventory(), job.status.node, indices) or job.spec.vendor
        return SandboxedJob(
            user_id=job.spec.user_id,
            vendor=vendor,
            gpu_indices=indices,
            gpu_count=job.spec.gpu_count,
            environment=self.environment(job),
            memory_mb=job.spec.memory_mb,
            cpu_millis=job.spec.cpu_millis,
        )
