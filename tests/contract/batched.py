"""A blocking face on the asyncio proxied client with every write sent in a batch.

The contract suite calls module-level functions; this object offers the same names, each
running the asyncio client's operation on a loop of its own (a thread). The client is made
with ``batch_after=0``: every write (create, setter, delete) travels inside
``POST /v1/crd/batch``, so the whole suite checks that a batched call is answered exactly
as its own route answers it. Watches are the blocking proxied client's (a batch carries
no reads).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from gridweave_clients.kuberay import AsyncProxiedClient
from gridweave_controller.operations import OPERATIONS
from job_gateway import crd_client

__all__ = ["BatchedFunctions"]

_WATCHES = ("watch_jobs", "watch_endpoints")


class BatchedFunctions:
    """The ``crd`` functions over an ``AsyncProxiedClient`` that batches every write."""

    def __init__(self, url: str, token: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._client = self._run(self._make_client(url, token))
        crd_client.connect(url, token)  # the watches
        for operation in OPERATIONS:
            setattr(self, operation.name, self._blocking(operation.name))
        for name in _WATCHES:
            setattr(self, name, getattr(crd_client, name))

    @staticmethod
    async def _make_client(url: str, token: str) -> AsyncProxiedClient:
        return AsyncProxiedClient(url, token, batch_after=0)

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def _blocking(self, name: str) -> Callable[..., Any]:
        method = getattr(self._client, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._run(method(*args, **kwargs))

        return call

    def close(self) -> None:
        """Close both clients and stop the loop."""
        crd_client.close()
        self._run(self._client.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()
