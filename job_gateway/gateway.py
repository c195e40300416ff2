"""The gateway's moving parts, owned by one event loop: CRD client, inventory, scheduler.

:class:`Gateway` is created by the app when it starts serving and closed when it stops.
Everything here runs on the server's event loop (routes are ``async``), so the allocation
map and the scheduler, which are not thread-safe, have one owner.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import suppress

from gridweave_controller.operations import AsyncClientBase
from job_gateway.inventory import Inventory, InventoryError, InventorySource
from job_gateway.scheduler import AllocationMap, Scheduler
from job_gateway.settings import GatewaySettings
from job_gateway.storage import ObjectStore

__all__ = ["Gateway"]

_log = logging.getLogger(__name__)


class Gateway:
    """What the routes and the background loops share."""

    def __init__(
        self,
        settings: GatewaySettings,
        *,
        crd: AsyncClientBase,
        inventory_source: InventorySource,
        store: ObjectStore,
    ) -> None:
        self.settings = settings
        self.crd = crd
        self.inventory_source = inventory_source
        self.store = store
        self.allocations = AllocationMap()
        self.scheduler = Scheduler(
            Inventory(),
            self.allocations,
            policy=settings.scheduling_policy,
            aging_s=settings.aging_seconds,
        )
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Read the inventory, then follow it."""
        self.scheduler.set_inventory(await self._read_inventory())
        self._tasks.append(asyncio.create_task(self._refresh_inventory(), name="inventory"))

    async def stop(self) -> None:
        """Stop the background tasks."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with suppress(asyncio.CancelledError):
                await task
        self.scheduler.close()

    async def _read_inventory(self) -> Inventory:
        # the sources block (NVML, a file, an HTTP call): off the loop
        return await asyncio.to_thread(self.inventory_source.read_inventory)

    async def _refresh_inventory(self) -> None:
        while True:
            await asyncio.sleep(self.settings.inventory_refresh_seconds)
            try:
                inventory = await self._read_inventory()
            except InventoryError:
                _log.warning("inventory unavailable; keeping the last one", exc_info=True)
                continue
            if inventory != self.scheduler.inventory:
                self.scheduler.set_inventory(inventory)
