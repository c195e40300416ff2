"""The one interface every inventory source implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from job_gateway.inventory.models import Inventory

__all__ = ["InventorySource"]


@runtime_checkable
class InventorySource(Protocol):
    """Where the nodes and GPUs come from: the local machine, a static file, the registry."""

    def read_inventory(self) -> Inventory:
        """The inventory now; raises :class:`~job_gateway.inventory.errors.InventoryError`."""
        ...
