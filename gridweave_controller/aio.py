"""The typed client under asyncio: ``AsyncCrdClient``, the same flows as ``CrdClient``.

For services that serve the typed operations from an event loop (kuberay-service): no
worker thread per call. The store is the official client's asyncio API
(``kubernetes.aio``)::

    client = await gridweave_controller.aio.connect(namespace="gridweave")
    job = await client.create_job("job-1", "alice", "s3://fn", vram_mb=8192)
    await client.close()

Validation, phase machines, conditions and the read-modify-write loop are the flows of
:mod:`gridweave_controller._flow`, shared with the blocking client; only the driver differs.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

from kubernetes.aio import client as aio_client
from kubernetes.aio import config as aio_config
from kubernetes.client import Configuration as BlockingConfiguration
from kubernetes.client.rest import should_bypass_proxies

from gridweave_controller._flow import MAX_WRITE_ATTEMPTS, FlowContext, run_flow_async, utc_now
from gridweave_controller._kube_aio_store import AsyncKubeStore
from gridweave_controller._kubeconfig import kubeconfig_file, resolve_namespace
from gridweave_controller.errors import TransportError
from gridweave_controller.operations import AsyncClientBase, Operation
from gridweave_controller.store import AsyncRawStore, AsyncRawWatchSource

__all__ = ["AsyncCrdClient", "connect"]

_T = TypeVar("_T")


class AsyncCrdClient(AsyncClientBase):
    """:class:`~gridweave_controller.CrdClient`'s operations, awaited, on an asyncio store.

    Arguments are checked when the call is awaited (a coroutine does not run before), with
    the same errors as the blocking client.
    """

    def __init__(
        self,
        store: AsyncRawStore,
        namespace: str,
        *,
        clock: Callable[[], datetime] = utc_now,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        max_write_attempts: int = MAX_WRITE_ATTEMPTS,
    ) -> None:
        self.store = store
        self.context = FlowContext(namespace, clock=clock, max_write_attempts=max_write_attempts)
        self._sleep = sleep

    @property
    def namespace(self) -> str:
        """The namespace every operation acts in."""
        return self.context.namespace

    async def close(self) -> None:
        """Close the store's connections, if it holds any."""
        if isinstance(self.store, AsyncKubeStore):
            await self.store.close()

    def watch_target(self) -> tuple[AsyncRawWatchSource, str]:
        """Watches read the store, in this client's namespace."""
        return self.store, self.namespace

    async def perform_operation(
        self, operation: Operation[..., _T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> _T:
        """Run the operation's flow on the store, awaiting each call."""
        flow = operation.flow(self.context, *args, **kwargs)
        return await run_flow_async(flow, self.store, self._sleep)


def _environment_proxy(host: str) -> str | None:
    # The blocking client takes HTTPS_PROXY / NO_PROXY (names, suffixes, address ranges) from
    # the environment once, when it is configured: apply its very rule, once, here, rather
    # than let aiohttp look them up on every request.
    blocking = BlockingConfiguration(host=host)
    if blocking.proxy and not should_bypass_proxies(host, blocking.no_proxy or ""):
        return str(blocking.proxy)
    return None


async def _load_configuration(
    kubeconfig: str | os.PathLike[str] | None,
) -> aio_client.Configuration:
    configuration = aio_client.Configuration()
    if kubeconfig is None:
        try:
            aio_config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration
            )
            return configuration
        except aio_config.ConfigException:
            pass
    try:
        await aio_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig_file(kubeconfig), client_configuration=configuration
        )
    except (aio_config.ConfigException, OSError) as exc:
        raise TransportError(f"no Kubernetes configuration found: {exc}") from exc
    return configuration


async def connect(
    *, kubeconfig: str | os.PathLike[str] | None = None, namespace: str | None = None
) -> AsyncCrdClient:
    """Connect like ``crd.init_k8s_client``: in-cluster, else ``kubeconfig`` / ``KUBECONFIG``.

    The namespace is ``namespace``, else ``KUBERAY_NAMESPACE``, else ``gridweave``. Close
    the client with :meth:`AsyncCrdClient.close`.
    """
    configuration = await _load_configuration(kubeconfig)
    if configuration.proxy is None:
        configuration.proxy = _environment_proxy(configuration.host)
    configuration.client_session_kwargs = {"trust_env": False}
    store = AsyncKubeStore(aio_client.ApiClient(configuration))
    return AsyncCrdClient(store, resolve_namespace(namespace))
