"""The blocking typed client: every operation's flow run on a :class:`RawStore`.

:mod:`gridweave_controller.crd` exposes one :class:`CrdClient` as module-level functions;
:class:`~gridweave_controller.aio.AsyncCrdClient` runs the very same flows under asyncio.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from gridweave_controller._flow import MAX_WRITE_ATTEMPTS, FlowContext, run_flow, utc_now
from gridweave_controller.operations import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_SECONDS,
    BlockingClientBase,
    Operation,
)
from gridweave_controller.store import RawStore, RawWatchSource

__all__ = ["DEFAULT_MAX_RETRIES", "DEFAULT_TIMEOUT_SECONDS", "MAX_WRITE_ATTEMPTS", "CrdClient"]

_T = TypeVar("_T")


class CrdClient(BlockingClientBase):
    """Typed GridweaveJob and GridweaveEndpoint operations in one namespace of one store."""

    def __init__(
        self,
        store: RawStore,
        namespace: str,
        *,
        clock: Callable[[], datetime] = utc_now,
        sleep: Callable[[float], None] = time.sleep,
        max_write_attempts: int = MAX_WRITE_ATTEMPTS,
    ) -> None:
        self.store = store
        self.context = FlowContext(namespace, clock=clock, max_write_attempts=max_write_attempts)
        self._sleep = sleep

    @property
    def namespace(self) -> str:
        """The namespace every operation acts in."""
        return self.context.namespace

    def watch_target(self) -> tuple[RawWatchSource, str]:
        """Watches read the store, in this client's namespace."""
        return self.store, self.namespace

    def perform_operation(
        self, operation: Operation[..., _T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> _T:
        """Run the operation's flow on the store."""
        return run_flow(operation.flow(self.context, *args, **kwargs), self.store, self._sleep)
