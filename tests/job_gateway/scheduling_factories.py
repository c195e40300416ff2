"""Factories for the inventory and scheduler tests: defaults in one place."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from gridweave_controller.models import Endpoint, Job
from gridweave_controller.vendors import GpuVendor, Vendor
from job_gateway.inventory import Gpu, Inventory, Node
from job_gateway.scheduler import Allocation, Kind, PlacementRequest

GIB = 1024  # MiB


def make_node(
    name: str,
    sizes: Sequence[int] = (80 * GIB,) * 8,
    *,
    vendor: GpuVendor = "nvidia",
    ready: bool = True,
    cordoned: Sequence[int] = (),
    model: str | None = None,
    simulated: bool = False,
    cpu_millis: int | None = None,
    memory_mb: int | None = None,
) -> Node:
    """A node with one GPU per entry of ``sizes`` (MiB), indices from 0."""
    return Node(
        name=name,
        ready=ready,
        cpu_millis=cpu_millis,
        memory_mb=memory_mb,
        gpus=tuple(
            Gpu(
                node=name,
                index=index,
                vendor=vendor,
                model=model or f"{vendor} {size // GIB}GB",
                vram_mb=size,
                schedulable=index not in cordoned,
                simulated=simulated,
            )
            for index, size in enumerate(sizes)
        ),
    )


def make_inventory(*nodes: Node) -> Inventory:
    """An inventory of these nodes."""
    return Inventory(nodes=nodes)


def request(
    name: str,
    vram_mb: int,
    gpu_count: int = 1,
    vendor: Vendor = "any",
    *,
    priority: int = 0,
    at: float = 0.0,
    kind: Kind = "job",
    real_gpu: bool = False,
    cpu_millis: int = 0,
    memory_mb: int = 0,
    gpu_models: Sequence[str] = (),
    user: str = "",
) -> PlacementRequest:
    """A waiting request."""
    return PlacementRequest(
        name=name,
        vram_mb=vram_mb,
        gpu_count=gpu_count,
        vendor=vendor,
        priority=priority,
        submitted_at=at,
        kind=kind,
        real_gpu=real_gpu,
        cpu_millis=cpu_millis,
        memory_mb=memory_mb,
        gpu_models=tuple(gpu_models),
        user=user,
    )


def holding(
    name: str,
    node: str,
    indices: Sequence[int],
    vram_mb: int,
    *,
    kind: Kind = "job",
    provisional: bool = False,
    cpu_millis: int = 0,
    memory_mb: int = 0,
    user: str = "",
    vendor: Vendor = "any",
) -> Allocation:
    """An allocation as the informer would derive it (or a provisional one)."""
    return Allocation(
        kind, name, node, tuple(indices), vram_mb, provisional, cpu_millis, memory_mb, user, vendor
    )


_CREATED = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)


def job_object(
    name: str,
    *,
    phase: str = "Pending",
    node: str | None = None,
    gpu_indices: Sequence[int] = (),
    vram_mb: int = 10 * GIB,
    gpu_count: int = 1,
    vendor: Vendor = "any",
    created: datetime = _CREATED,
) -> Job:
    """A GridweaveJob as the store returns it."""
    status: dict[str, Any] = {"phase": phase, "gpuIndices": list(gpu_indices)}
    if node is not None:
        status["node"] = node
    return Job.from_raw(
        {
            "apiVersion": "gridweave.io/v1",
            "kind": "GridweaveJob",
            "metadata": {
                "name": name,
                "namespace": "gridweave",
                "creationTimestamp": created.isoformat().replace("+00:00", "Z"),
            },
            "spec": {
                "userId": "alice",
                "functionRef": "file:///fn.pkl",
                "vramMb": vram_mb,
                "gpuCount": gpu_count,
                "vendor": vendor,
            },
            "status": status,
        }
    )


def endpoint_object(
    name: str,
    *,
    phase: str = "Pending",
    node: str | None = None,
    gpu_indices: Sequence[int] = (),
    vram_mb: int = 20 * GIB,
    gpu_count: int = 1,
    vendor: Vendor = "any",
    created: datetime = _CREATED,
    max_replicas: int = 1,
    mode: str = "vllm",
) -> Endpoint:
    """A GridweaveEndpoint as the store returns it."""
    status: dict[str, Any] = {"phase": phase, "gpuIndices": list(gpu_indices)}
    if node is not None:
        status["node"] = node
    return Endpoint.from_raw(
        {
            "apiVersion": "gridweave.io/v1",
            "kind": "GridweaveEndpoint",
            "metadata": {
                "name": name,
                "namespace": "gridweave",
                "creationTimestamp": created.isoformat().replace("+00:00", "Z"),
            },
            "spec": {
                "userId": "alice",
                "mode": mode,
                "model": "meta-llama/Llama-3.1-8B",
                "vramMb": vram_mb,
                "gpuCount": gpu_count,
                "vendor": vendor,
                "maxReplicas": max_replicas,
            },
            "status": status,
        }
    )
