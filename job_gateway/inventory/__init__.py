"""The GPU inventory: one interface, three sources (this machine, a static file, the registry).

Every source answers :meth:`InventorySource.read_inventory` with an :class:`Inventory`:
nodes (name, ready or NotReady, labels) and their GPUs (node, index, vendor, model, total
VRAM in MiB, schedulable or cordoned, simulated or real).
"""

from __future__ import annotations

from job_gateway.inventory.errors import InventoryError, InventoryFileError, InventoryUnavailable
from job_gateway.inventory.factory import open_inventory_source
from job_gateway.inventory.local import LocalMachineSource, simulated_gpu
from job_gateway.inventory.models import MAX_GPUS_PER_NODE, MAX_VRAM_MB, Gpu, Inventory, Node
from job_gateway.inventory.registry import NodeRegistrySource, inventory_from_nodes
from job_gateway.inventory.settings import InventorySettings, SourceKind
from job_gateway.inventory.source import InventorySource
from job_gateway.inventory.static import InventoryFile, StaticFileSource, load_inventory_file

__all__ = [
    "MAX_GPUS_PER_NODE",
    "MAX_VRAM_MB",
    "Gpu",
    "Inventory",
    "InventoryError",
    "InventoryFile",
    "InventoryFileError",
    "InventorySettings",
    "InventorySource",
    "InventoryUnavailable",
    "LocalMachineSource",
    "Node",
    "NodeRegistrySource",
    "SourceKind",
    "StaticFileSource",
    "inventory_from_nodes",
    "load_inventory_file",
    "open_inventory_source",
    "simulated_gpu",
]
