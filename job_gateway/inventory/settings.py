"""The inventory's settings: which source, and the simulated GPU of a machine without one."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from gridweave_controller.vendors import GpuVendor
from job_gateway.inventory.models import MAX_VRAM_MB, NodeName

__all__ = ["InventorySettings", "SourceKind"]

SourceKind = Literal["local", "file", "registry", "local+registry"]


class InventorySettings(BaseSettings):
    """``GATEWAY_INVENTORY_*`` and ``GATEWAY_SIMULATED_GPU_*`` (the gateway's own prefix)."""

    model_config = SettingsConfigDict(env_prefix="GATEWAY_", extra="ignore", frozen=True)

    inventory_source: SourceKind = Field(
        default="local",
        description=(
            "local: this machine's GPUs (NVML, amdsmi, rocm-smi; else one simulated GPU); "
            "file: the static file inventory_file; registry: kuberay-service's GET /v1/nodes; "
            "local+registry: this machine (the all-in-one's, whose Ray head it runs) and the "
            "nodes joined to it."
        ),
    )
    inventory_file: Path | None = Field(
        default=None, description="The static inventory (YAML or JSON) when the source is file."
    )
    node_name: NodeName = Field(
        default_factory=socket.gethostname,
        description="This machine's node name for the local source (default: the hostname).",
    )
    simulated_gpu_vram_mb: Annotated[int, Field(ge=1, le=MAX_VRAM_MB)] = Field(
        default=24_576,
        description="VRAM (MiB) of the one simulated GPU declared when no GPU is found.",
    )
    simulated_gpu_vendor: GpuVendor = Field(
        default="nvidia", description="Vendor of the simulated GPU."
    )
    simulated_gpu_model: Annotated[str, Field(min_length=1, max_length=200)] = Field(
        default="Simulated GPU", description="Model name of the simulated GPU."
    )
