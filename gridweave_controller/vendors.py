"""GPU vendors: the one ``Vendor`` type of the resources, the clients and metering."""

from __future__ import annotations

from typing import Literal, get_args

__all__ = ["GPU_VENDORS", "VENDORS", "GpuVendor", "Vendor"]

#: The maker of a GPU: what a node has, what a usage record is priced by.
GpuVendor = Literal["nvidia", "amd"]
#: What a job or endpoint asks for: one maker, or ``any``.
Vendor = Literal["nvidia", "amd", "any"]
GPU_VENDORS: tuple[GpuVendor, ...] = get_args(GpuVendor)
VENDORS: tuple[Vendor, ...] = get_args(Vendor)
