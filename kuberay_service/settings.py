"""kuberay-service settings, read from the environment.

``KUBERAY_HOST``, ``KUBERAY_PORT`` (8800), ``KUBERAY_NAMESPACE`` (``gridweave``),
``KUBERAY_KUBECONFIG`` (unset: in-cluster config, else ``KUBECONFIG`` / ``~/.kube/config``),
plus the deployment-wide ``GRIDWEAVE_INTERNAL_TOKEN`` every ``/v1/crd`` call must carry.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from gridweave_runtime.settings import ServiceSettings

__all__ = ["KubeRaySettings"]


class KubeRaySettings(ServiceSettings):
    """Settings of kuberay-service (prefix ``KUBERAY_``)."""

    model_config = SettingsConfigDict(env_prefix="KUBERAY_")

    port: int = Field(default=8800, ge=1, le=65535, description="TCP port of the HTTP server.")
    namespace: str = Field(
        default="gridweave",
        description="KUBERAY_NAMESPACE: the namespace holding the Gridweave resources.",
    )
    kubeconfig: Path | None = Field(
        default=None,
        description=(
            "KUBERAY_KUBECONFIG: kubeconfig of the cluster. Unset: in-cluster config, "
            "else KUBECONFIG or ~/.kube/config."
        ),
    )
