"""The inventory's errors.

::

    InventoryError                  any failure to read an inventory
    ├── InventoryFileError          a static file that is missing, unreadable or invalid
    └── InventoryUnavailable        the node registry could not be read
"""

from __future__ import annotations

__all__ = ["InventoryError", "InventoryFileError", "InventoryUnavailable"]


class InventoryError(Exception):
    """An inventory could not be read."""


class InventoryFileError(InventoryError):
    """A static inventory file is missing, unreadable or invalid; ``field`` names the culprit."""

    def __init__(self, message: str, *, path: str, field: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.field = field


class InventoryUnavailable(InventoryError):
    """The node registry did not answer with a usable node list."""
