"""The one active client of a module, whose operation methods are that module's functions.

``gridweave_controller.crd``, the in-memory test transport and the proxied
``job_gateway.crd_client`` expose the typed operations as module-level functions acting on
whichever client is installed: ``create_job = _ACTIVE.create_job``. An :class:`ActiveClient`
is itself a client (it inherits every operation) whose runner hands each call to the client
installed now, so the functions have the operations' own signatures and cannot drift.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from gridweave_controller.operations import BlockingClientBase, Operation
from gridweave_controller.store import RawWatchSource

__all__ = ["ActiveClient"]

_Client = TypeVar("_Client", bound=BlockingClientBase)
_T = TypeVar("_T")


class ActiveClient(BlockingClientBase, Generic[_Client]):
    """Holds the client a module's functions use; built on first use if none was installed."""

    def __init__(
        self,
        make_default: Callable[[], _Client],
        on_replaced: Callable[[_Client], None] | None = None,
    ) -> None:
        self._make_default = make_default
        self._on_replaced = on_replaced
        self._client: _Client | None = None
        self._lock = threading.Lock()

    def install(self, client: _Client | None) -> None:
        """Make ``client`` the active one (None: build a default on next use)."""
        with self._lock:
            previous, self._client = self._client, client
        if previous is not None and previous is not client and self._on_replaced is not None:
            self._on_replaced(previous)

    @property
    def installed(self) -> _Client | None:
        """The client installed now, or None when the next use builds the default."""
        return self._client

    def current(self) -> _Client:
        """The active client; two threads' first calls build one default client, not two."""
        client = self._client
        if client is not None:
            return client
        with self._lock:
            if self._client is None:
                self._client = self._make_default()
            return self._client

    def watch_target(self) -> tuple[RawWatchSource, str]:
        """The active client's."""
        return self.current().watch_target()

    def perform_operation(
        self, operation: Operation[..., _T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> _T:
        """Hand the call to the active client."""
        return self.current().perform_operation(operation, args, kwargs)
