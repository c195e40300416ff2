"""This machine and the joined nodes as one inventory (``local+registry``).

The all-in-one's machine runs the gateway's local Ray head and keeps its own GPUs, while
GPU owners join theirs with ``deploy/join-node.sh``: the gateway then places on both. A
joined node may not take the head machine's name (the registry's node is left out, and
said so in the log: the local machine is the one the head's Ray node serves).
"""

from __future__ import annotations

import logging

from job_gateway.inventory.models import Inventory
from job_gateway.inventory.source import InventorySource

__all__ = ["CombinedSource"]

_log = logging.getLogger(__name__)


class CombinedSource:
    """The local machine's nodes first, then the registry's under other names."""

    def __init__(self, local: InventorySource, registry: InventorySource) -> None:
        self._local = local
        self._registry = registry

    def read_inventory(self) -> Inventory:
        """Both sources now; the registry's failure is this read's failure (nothing is
        decided on half the news)."""
        local = self._local.read_inventory()
        joined = self._registry.read_inventory()
        names = {node.name for node in local.nodes}
        for node in joined.nodes:
            if node.name in names:
                _log.warning("joined node %s has the local machine's name: left out", node.name)
        kept = tuple(node for node in joined.nodes if node.name not in names)
        return Inventory(nodes=(*local.nodes, *kept))
