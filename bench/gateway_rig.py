"""What the gateway benchmarks share: the cluster, many jobs made at once, a gateway on them.

``bench_placements`` and ``bench_rehydration`` start the real Kubernetes API server (as the
tests do), create thousands of GridweaveJobs concurrently through the asyncio typed client,
and run the real :class:`~job_gateway.gateway.Gateway` (informers, allocation map,
scheduling loop) over a static inventory of simulated nodes, on either transport: direct
(``aio.connect``) or proxied (``AsyncProxiedClient`` -> kuberay-service as its own process).
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gridweave_clients.kuberay import AsyncProxiedClient
from gridweave_controller import aio
from gridweave_controller.aio import AsyncCrdClient
from gridweave_controller.operations import AsyncClientBase
from gridweave_runtime.storage import LocalObjectStore
from job_gateway.gateway import Gateway
from job_gateway.inventory import Gpu, Inventory, Node
from job_gateway.settings import GatewaySettings
from tests.support.credentials import service_auth

__all__ = [
    "TOKEN",
    "Transport",
    "create_concurrently",
    "crd_client",
    "gateway_on",
    "load_average",
    "simulated_inventory",
]

Transport = Literal["direct", "proxied"]
TOKEN = "bench-internal-token-" + uuid.uuid4().hex
GPU_MB = 81920
GPUS_PER_NODE = 8
#: Creates in flight while setting up (the apiserver takes them as fast at 64 as at more).
CREATES_IN_FLIGHT = 64


class StaticInventory:
    """An inventory source that answers one fixed inventory."""

    def __init__(self, inventory: Inventory) -> None:
        self.inventory = inventory

    def read_inventory(self) -> Inventory:
        """The fixed inventory."""
        return self.inventory


def simulated_inventory(nodes: int) -> Inventory:
    """``nodes`` ready nodes of 8 simulated 80 GiB NVIDIA GPUs each."""
    return Inventory(
        nodes=tuple(
            Node(
                name=f"node-{n:04d}",
                gpus=tuple(
                    Gpu(
                        node=f"node-{n:04d}",
                        index=i,
                        vendor="nvidia",
                        model="Simulated 80GB",
                        vram_mb=GPU_MB,
                        simulated=True,
                    )
                    for i in range(GPUS_PER_NODE)
                ),
            )
            for n in range(nodes)
        )
    )


async def create_concurrently(
    calls: Iterable[Callable[[], Awaitable[object]]], in_flight: int = CREATES_IN_FLIGHT
) -> float:
    """Await every call, ``in_flight`` at a time; the seconds it took."""
    gate = asyncio.Semaphore(in_flight)

    async def one(call: Callable[[], Awaitable[object]]) -> None:
        async with gate:
            await call()

    started = time.perf_counter()
    await asyncio.gather(*(one(call) for call in calls))
    return time.perf_counter() - started


@asynccontextmanager
async def crd_client(
    transport: Transport, kubeconfig: Path, namespace: str, kuberay_url: str | None
) -> AsyncIterator[AsyncClientBase]:
    """The gateway's CRD client for ``transport`` (as ``job_gateway.app.connect_crd``)."""
    client: AsyncCrdClient | AsyncProxiedClient
    if transport == "direct":
        client = await aio.connect(kubeconfig=kubeconfig, namespace=namespace)
    else:
        assert kuberay_url is not None
        client = AsyncProxiedClient(kuberay_url, TOKEN)
    try:
        yield client
    finally:
        await client.close()


@dataclass(frozen=True)
class GatewayRun:
    """A gateway started on a namespace: it and the seconds ``start()`` took."""

    gateway: Gateway
    start_seconds: float


@asynccontextmanager
async def gateway_on(
    crd: AsyncClientBase, inventory: Inventory, workdir: Path, *, max_parallel_writes: int
) -> AsyncIterator[GatewayRun]:
    """A :class:`Gateway` over ``crd``, started (listed and synced) as the app starts it."""
    settings = GatewaySettings(
        **service_auth(TOKEN),
        state_dir=workdir,
        max_parallel_writes=max_parallel_writes,
        pass_interval_seconds=60.0,  # passes run on every change; aging is not measured
    )
    gateway = Gateway(
        settings,
        crd=crd,
        inventory_source=StaticInventory(inventory),
        store=LocalObjectStore(workdir / "objects"),
    )
    async with AsyncExitStack() as stack:
        started = time.perf_counter()
        await gateway.start()
        seconds = time.perf_counter() - started
        stack.push_async_callback(gateway.stop)
        yield GatewayRun(gateway, seconds)


def load_average() -> str:
    """The 1-minute load average now (other sessions share the machine)."""
    return f"{os.getloadavg()[0]:.1f}"
