"""Which GPUs a worker sees: the visibility variables for the job's vendor and indices."""

from __future__ import annotations

from collections.abc import Sequence

from gridweave_controller.vendors import GpuVendor, Vendor
from job_gateway.inventory import Inventory

__all__ = ["placed_vendor", "visible_devices"]


def visible_devices(
    inventory: Inventory, node: str, indices: Sequence[int], requested: Vendor
) -> dict[str, str]:
    """The environment that shows the worker exactly ``indices`` of ``node``.

    NVIDIA: ``CUDA_VISIBLE_DEVICES`` with ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (NVML's order, in
    which the inventory numbers them). AMD: ``HIP_VISIBLE_DEVICES`` with HIP's own index of
    each GPU (``Gpu.visible_index``); ``ROCR_VISIBLE_DEVICES`` is left unset, since both
    filters apply one after the other and the second would renumber the first's devices.
    The vendor is the allocated GPUs' (a job asking ``any`` gets one vendor's GPUs); a GPU
    the inventory no longer lists falls back to the job's vendor, else NVIDIA.
    """
    known = {gpu.index: gpu for gpu in (inventory.node(node) or _EMPTY).gpus}
    vendor = placed_vendor(inventory, node, indices) or _fallback(requested)
    shown = [known[i].visible_index if i in known else i for i in indices]
    listed = ",".join(str(i) for i in shown)
    if vendor == "amd":
        return {"HIP_VISIBLE_DEVICES": listed}
    return {"CUDA_VISIBLE_DEVICES": listed, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


def placed_vendor(inventory: Inventory, node: str, indices: Sequence[int]) -> GpuVendor | None:
    """The maker of ``indices`` of ``node`` as the inventory lists them; None: not listed,
    or GPUs of two makers."""
    known = {gpu.index: gpu for gpu in (inventory.node(node) or _EMPTY).gpus}
    vendors = {known[i].vendor for i in indices if i in known}
    return vendors.pop() if len(vendors) == 1 else None


def _fallback(requested: Vendor) -> GpuVendor:
    return "amd" if requested == "amd" else "nvidia"


class _NoNode:
    gpus: tuple[()] = ()


_EMPTY = _NoNode()
