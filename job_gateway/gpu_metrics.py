"""The GPUs' Prometheus series, per node and GPU, on the gateway's registry (``/metrics``).

Series (all prefixed ``gridweave_gpu_``), labelled ``node``, ``gpu`` (its index),
``vendor``, ``model`` and ``simulated`` (``true`` for a declared stand-in):

- ``memory_total_bytes``: the GPU's VRAM;
- ``memory_held_bytes``: the VRAM the scheduler holds there for jobs and endpoints (from the
  GridweaveJob and GridweaveEndpoint objects);
- ``memory_used_bytes``: the VRAM measured in use (NVML or amdsmi on the gateway's machine, a
  joined node's last heartbeat); a simulated GPU's is the VRAM held on it, the one figure
  it has; absent where nothing measures it (rocm-smi, a declared GPU);
- ``utilization_ratio``: the share of time the GPU was busy, 0 to 1 (NVML or amdsmi); a
  simulated GPU's is held / total; absent where nothing measures it.

They are set with the capacity gauges (:class:`job_gateway.metrics.GatewayMetrics`), on the
event loop, from the inventory the scheduler decides on: the measurements are as fresh as
the last inventory read (``GATEWAY_INVENTORY_REFRESH_SECONDS``), the holds as the last pass.
A GPU that left the inventory leaves its series.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Gauge

from job_gateway.inventory import Gpu, Inventory

__all__ = ["GpuGauges", "gpu_used_mb", "gpu_utilization"]

_PREFIX = "gridweave_gpu_"
_LABELS = ("node", "gpu", "vendor", "model", "simulated")
_MIB = 2**20
#: The VRAM held on a GPU, MiB (:meth:`job_gateway.scheduler.AllocationMap.held_mb`).
HeldMb = Callable[[str, int], int]


def gpu_used_mb(gpu: Gpu, held_mb: int) -> int | None:
    """VRAM in use, MiB: measured, else a simulated GPU's held VRAM, else unknown (None)."""
    if gpu.used_mb is not None:
        return gpu.used_mb
    return min(held_mb, gpu.vram_mb) if gpu.simulated else None


def gpu_utilization(gpu: Gpu, held_mb: int) -> float | None:
    """How busy the GPU was, 0 to 1: measured, else a simulated GPU's held share of its VRAM,
    else unknown (None)."""
    if gpu.utilization_percent is not None:
        return gpu.utilization_percent / 100
    return min(held_mb / gpu.vram_mb, 1.0) if gpu.simulated else None


class GpuGauges:
    """The four GPU series on ``registry``; :meth:`update` sets them all at once."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def gauge(name: str, documentation: str) -> Gauge:
            return Gauge(f"{_PREFIX}{name}", documentation, _LABELS, registry=registry)

        self.memory_total = gauge("memory_total_bytes", "VRAM of the GPU")
        self.memory_held = gauge("memory_held_bytes", "VRAM the scheduler holds on the GPU")
        self.memory_used = gauge(
            "memory_used_bytes", "VRAM measured in use (a simulated GPU: its held VRAM)"
        )
        self.utilization = gauge(
            "utilization_ratio", "Share of time the GPU was busy (a simulated GPU: held / total)"
        )
        self._shown: dict[str, set[tuple[str, ...]]] = {}

    def update(self, inventory: Inventory, held_mb: HeldMb) -> None:
        """Every GPU of ``inventory`` with the VRAM ``held_mb`` says is held on it."""
        figures: dict[str, tuple[Gauge, dict[tuple[str, ...], float]]] = {
            "total": (self.memory_total, {}),
            "held": (self.memory_held, {}),
            "used": (self.memory_used, {}),
            "utilization": (self.utilization, {}),
        }
        for gpu in inventory.gpus():
            labels: tuple[str, ...] = (
                gpu.node,
                str(gpu.index),
                gpu.vendor,
                gpu.model,
                "true" if gpu.simulated else "false",
            )
            held = held_mb(gpu.node, gpu.index)
            figures["total"][1][labels] = gpu.vram_mb * _MIB
            figures["held"][1][labels] = held * _MIB
            if (used := gpu_used_mb(gpu, held)) is not None:
                figures["used"][1][labels] = used * _MIB
            if (busy := gpu_utilization(gpu, held)) is not None:
                figures["utilization"][1][labels] = busy
        for name, (gauge, values) in figures.items():
            for gone in self._shown.get(name, set()) - values.keys():
                gauge.remove(*gone)
            for shown, value in values.items():
                gauge.labels(*shown).set(value)
            self._shown[name] = set(values)
