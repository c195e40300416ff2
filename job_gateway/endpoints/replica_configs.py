"""What a placed endpoint's replicas are deployed with: the :class:`ReplicaConfig` the
reconciler hands to Serve (the mode's backend, the node's devices, the sandbox, the image
with its owner's pull token, pip= requirements, memory and CPU), and the reason a deployment
Serve gave up on is failed with."""

from __future__ import annotations

from dataclasses import dataclass

from gridweave_clients.gateway.reasons import PIP_INSTALL_FAILED
from gridweave_controller.models import Endpoint
from gridweave_runtime.storage import StorageConfig
from job_gateway.endpoints.replica import ReplicaConfig
from job_gateway.endpoints.settings import EndpointSettings
from job_gateway.endpoints.vllm_config import vllm_launch
from job_gateway.execution.devices import placed_vendor, visible_devices
from job_gateway.execution.image_pulls import ImageRefusedToOwner, PullTokens
from job_gateway.inventory import Inventory
from job_gateway.sandbox.config import SandboxConfig
from job_gateway.sandbox.images import ImagePull

__all__ = ["ReplicaConfigs", "deploy_failure"]


@dataclass(frozen=True, slots=True)
class ReplicaConfigs:
    """Builds each placement's :class:`ReplicaConfig`; ``pull_tokens``: how a node pulls an
    endpoint's image with its owner's rights (None: an endpoint naming an image is refused)."""

    settings: EndpointSettings
    storage: StorageConfig
    sandbox: SandboxConfig
    key_digest: str
    pull_tokens: PullTokens | None = None

    async def for_placement(
        self, endpoint: Endpoint, inventory: Inventory, node: str, indices: tuple[int, ...]
    ) -> ReplicaConfig:
        """The configuration of ``endpoint``'s replicas on ``node``'s GPUs ``indices``.

        Raises:
            ImageRefusedToOwner: the owner may not pull its image (any longer), or this
                gateway pulls no images.
        """
        spec = endpoint.spec
        return ReplicaConfig(
            endpoint_id=endpoint.name,
            mode=spec.mode,
            storage=self.storage,
            key_digest=self.key_digest,
            devices=visible_devices(inventory, node, indices, spec.vendor),
            model=spec.model,
            model_ref=spec.model_ref,
            function_ref=spec.function_ref,
            vllm=(
                vllm_launch(
                    self.settings, inventory, node=node, indices=indices, vram_mb=spec.vram_mb
                )
                if spec.mode == "vllm"
                else None
            ),
            sandbox=self.sandbox,
            owner=spec.user_id,
            vendor=placed_vendor(inventory, node, indices) or spec.vendor,
            gpu_indices=indices,
            image=await self._image_pull(endpoint),
            pip=spec.pip or (),
            memory_mb=spec.memory_mb,
            cpu_millis=spec.cpu_millis,
        )

    async def _image_pull(self, endpoint: Endpoint) -> ImagePull | None:
        """How the node pulls the endpoint's image (None: the node's default image)."""
        image = endpoint.spec.image
        if image is None:
            return None
        if self.pull_tokens is None:
            raise ImageRefusedToOwner(
                "this gateway pulls no images: it has no service token to ask the platform "
                "for the owner's pull token (GRIDWEAVE_SERVICE_TOKEN)"
            )
        return await self.pull_tokens.pull_for(endpoint.spec.user_id, image)


def deploy_failure(message: str) -> tuple[str, str]:
    """The reason and message of a deployment Serve gave up on: ``PipInstallFailed`` with
    pip's words when its replicas could not install the endpoint's requirements (the
    replica's error, :mod:`~job_gateway.endpoints.sandboxed_backend`, is in Serve's
    message), else ``DeployFailed`` with Serve's message."""
    marker = f"{PIP_INSTALL_FAILED}: "
    at = message.rfind(marker)
    if at >= 0:
        return PIP_INSTALL_FAILED, message[at + len(marker) :].splitlines()[0]
    return "DeployFailed", message[:4000]
