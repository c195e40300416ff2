"""The inventory source the settings choose."""

from __future__ import annotations

from gridweave_clients.nodes import NodeRegistryClient
from job_gateway.inventory.combined import CombinedSource
from job_gateway.inventory.errors import InventoryError
from job_gateway.inventory.local import LocalMachineSource
from job_gateway.inventory.registry import NodeRegistrySource
from job_gateway.inventory.settings import InventorySettings
from job_gateway.inventory.source import InventorySource
from job_gateway.inventory.static import StaticFileSource

__all__ = ["open_inventory_source"]


def open_inventory_source(
    settings: InventorySettings, *, registry: NodeRegistryClient | None = None
) -> InventorySource:
    """The local machine, the static file, the registry (through ``registry``), or this
    machine and the registry together."""
    if settings.inventory_source == "file":
        if settings.inventory_file is None:
            raise InventoryError("GATEWAY_INVENTORY_FILE is required when the source is file")
        return StaticFileSource(settings.inventory_file)
    if settings.inventory_source in ("registry", "local+registry"):
        if registry is None:
            raise InventoryError("the registry source needs a node registry client")
        if settings.inventory_source == "registry":
            return NodeRegistrySource(registry)
        return CombinedSource(LocalMachineSource.detect(settings), NodeRegistrySource(registry))
    return LocalMachineSource.detect(settings)
