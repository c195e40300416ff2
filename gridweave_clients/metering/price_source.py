"""Metering's price table as the platform and the gateway read it: from metering itself.

Metering bills by its table (``METERING_PRICE_TABLE``) and is the only service configured
with one. The platform sizes a job's hold and shows an endpoint's price, and the gateway
picks the vendor an ``any`` endpoint's period is priced at, from the table metering answers
on ``GET /v1/prices``, so the hold, the figures shown and the bill cannot disagree.

:class:`MeteringPrices` reads the table on first use and again once it is older than
``max_age_seconds``; one read at a time. When metering does not answer, the last table read
is used (and the failure logged); with none read yet, the failure is raised (a 503 the
caller may retry), and raised again without a call for ``retry_seconds``, so a page of
endpoints or a burst of submissions waits on one failed read, not one each.
:class:`FixedPrices` is a table given outright, for code that prices without a metering
service (the unit tests of a rule).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Protocol

from gridweave_clients.errors import ServiceError
from gridweave_clients.metering.client import AsyncMeteringClient
from gridweave_clients.metering.pricing import PriceTable

__all__ = ["FixedPrices", "MeteringPrices", "PriceSource"]

_log = logging.getLogger(__name__)


class PriceSource(Protocol):
    """Where a service reads the price table from."""

    async def table(self) -> PriceTable:
        """The table now (read again when stale); raises ServiceError when none is known."""
        ...

    def last(self) -> PriceTable | None:
        """The table last read, without waiting (None: none read yet)."""
        ...


class FixedPrices:
    """One table, always."""

    def __init__(self, table: PriceTable) -> None:
        self._table = table

    async def table(self) -> PriceTable:
        return self._table

    def last(self) -> PriceTable:
        return self._table


class MeteringPrices:
    """Metering's table, read from ``GET /v1/prices`` and read again once stale."""

    def __init__(
        self,
        metering: AsyncMeteringClient,
        *,
        max_age_seconds: float = 60.0,
        retry_seconds: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._metering = metering
        self._max_age = max_age_seconds
        self._retry = retry_seconds
        self._clock = clock
        self._table: PriceTable | None = None
        self._read_at = 0.0
        #: the failure of the last read while no table is known, and when it happened
        self._failure: tuple[ServiceError, float] | None = None
        self._reading = asyncio.Lock()

    async def table(self) -> PriceTable:
        """The table, read again when older than ``max_age_seconds``; the last one when
        metering does not answer.

        Raises:
            ServiceError: metering did not answer and no table was read before.
        """
        if (table := self._fresh()) is not None:  # the usual case: no lock, no wait
            return table
        async with self._reading:
            if (table := self._fresh()) is not None:  # read by the caller this one waited on
                return table
            if self._failure is not None and self._clock() - self._failure[1] < self._retry:
                raise self._failure[0]
            try:
                self._table = await self._metering.get_prices()
            except ServiceError as exc:
                if self._table is None:
                    self._failure = (exc, self._clock())
                    raise
                _log.warning("metering's price table not read again (the last one stands): %s", exc)
            self._failure = None
            self._read_at = self._clock()
            return self._table

    def last(self) -> PriceTable | None:
        return self._table

    def _fresh(self) -> PriceTable | None:
        """The table when it is younger than ``max_age_seconds``."""
        if self._table is not None and self._clock() - self._read_at < self._max_age:
            return self._table
        return None
