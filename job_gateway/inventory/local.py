"""The local machine as an inventory: its NVIDIA and AMD GPUs, else one simulated GPU.

NVIDIA GPUs come from NVML (``nvidia-ml-py``), AMD GPUs from ``amdsmi`` or, without it,
``rocm-smi``'s JSON. Every library is optional. On a machine with both vendors the AMD GPUs
are numbered after the NVIDIA ones (``device_index`` keeps HIP's own index). Where no GPU is
found, the inventory is one simulated GPU of the configured size, marked ``simulated``. The
node's CPU is the cores this process may run on (``sched_getaffinity``) and its memory the
machine's physical memory (:func:`machine_capacity`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from gridweave_controller.vendors import GpuVendor
from job_gateway.inventory._amd import AmdSmiLibrary, amd_gpus, load_amdsmi, run_rocm_smi
from job_gateway.inventory._nvidia import NvmlLibrary, load_nvml, nvidia_gpus
from job_gateway.inventory.models import Gpu, Inventory, Node
from job_gateway.inventory.settings import InventorySettings

__all__ = ["LocalMachineSource", "machine_capacity", "simulated_gpu"]


def machine_capacity() -> tuple[int | None, int | None]:
    """(CPU millis, memory MiB) of this machine; None where it cannot be read."""
    try:
        cpu: int | None = len(os.sched_getaffinity(0)) * 1000
    except (AttributeError, OSError):  # not Linux
        count = os.cpu_count()
        cpu = count * 1000 if count else None
    try:
        memory: int | None = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    except (ValueError, OSError, AttributeError):
        memory = None
    return cpu, memory or None


def simulated_gpu(
    node: str, vram_mb: int, *, vendor: GpuVendor = "nvidia", model: str = "Simulated GPU"
) -> Gpu:
    """The declared stand-in GPU of a machine without one (index 0, marked simulated)."""
    return Gpu(node=node, index=0, vendor=vendor, model=model, vram_mb=vram_mb, simulated=True)


class LocalMachineSource:
    """This machine's GPUs, found through the vendor libraries passed in (None: not used)."""

    def __init__(
        self,
        node_name: str,
        *,
        nvml: NvmlLibrary | None,
        amdsmi: AmdSmiLibrary | None,
        rocm_smi: Callable[[], str | None] | None,
        simulated_vram_mb: int = 24_576,
        simulated_vendor: GpuVendor = "nvidia",
        simulated_model: str = "Simulated GPU",
        labels: Mapping[str, str] | None = None,
        capacity: tuple[int | None, int | None] | None = None,
    ) -> None:
        self.node_name = node_name
        #: (CPU millis, memory MiB) of the node: this machine's unless given.
        self.capacity = machine_capacity() if capacity is None else capacity
        self._nvml = nvml
        self._amdsmi = amdsmi
        self._rocm_smi = rocm_smi
        self._simulated = simulated_gpu(
            node_name, simulated_vram_mb, vendor=simulated_vendor, model=simulated_model
        )
        self._labels = dict(labels or {})

    @classmethod
    def detect(cls, settings: InventorySettings) -> LocalMachineSource:
        """The source over whichever vendor libraries this machine has."""
        return cls(
            settings.node_name,
            nvml=load_nvml(),
            amdsmi=load_amdsmi(),
            rocm_smi=run_rocm_smi,
            simulated_vram_mb=settings.simulated_gpu_vram_mb,
            simulated_vendor=settings.simulated_gpu_vendor,
            simulated_model=settings.simulated_gpu_model,
        )

    def read_inventory(self) -> Inventory:
        """One ready node: the GPUs found, or the simulated GPU when there are none."""
        gpus = self.find_gpus() or [self._simulated]
        cpu, memory = self.capacity
        node = Node(
            name=self.node_name,
            labels=self._labels,
            gpus=tuple(gpus),
            cpu_millis=cpu,
            memory_mb=memory,
        )
        return Inventory(nodes=(node,))

    def find_gpus(self) -> list[Gpu]:
        """The real GPUs of this machine (NVIDIA first), numbered uniquely on the node."""
        found = [] if self._nvml is None else nvidia_gpus(self._nvml, self.node_name)
        amd = amd_gpus(self.node_name, amdsmi=self._amdsmi, rocm_smi=self._rocm_smi)
        if found and amd:  # two runtimes, two numberings: AMD follows NVIDIA on the node
            start = max(gpu.index for gpu in found) + 1
            amd = [
                Gpu.model_validate(
                    gpu.model_dump() | {"index": start + n, "device_index": gpu.index}
                )
                for n, gpu in enumerate(amd)
            ]
        return found + amd
