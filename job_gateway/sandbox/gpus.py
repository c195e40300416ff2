"""A container's GPUs: the device nodes of its allocated indices, and how it numbers them.

NVIDIA: ``/dev/nvidia<index>`` and the driver's shared nodes ``nvidiactl``, ``nvidia-uvm``
and ``nvidia-uvm-tools``; AMD: ``/dev/kfd`` and the GPU's ``/dev/dri/renderD<128+index>``.
Only nodes that exist under the device directory are bound (a simulated GPU has none).
Inside, the GPUs whose nodes are there are numbered from 0 in the order of their indices,
as the driver enumerates the devices it can open, and ``CUDA_VISIBLE_DEVICES`` (with
``CUDA_DEVICE_ORDER=PCI_BUS_ID``) or ``HIP_VISIBLE_DEVICES`` says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from job_gateway.sandbox.oci import DeviceNode, device_node

__all__ = ["gpu_devices", "renumbered"]

_NVIDIA_SHARED = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools")
_AMD_RENDER_BASE = 128


def gpu_devices(device_dir: Path, vendor: str, indices: Sequence[int]) -> tuple[DeviceNode, ...]:
    """The device nodes of ``indices`` of the node's ``vendor`` GPUs that exist."""
    if vendor == "amd":
        wanted = ["kfd", *(f"dri/renderD{_AMD_RENDER_BASE + i}" for i in sorted(indices))]
    else:
        wanted = [*(f"nvidia{i}" for i in sorted(indices)), *_NVIDIA_SHARED]
    found = []
    for name in wanted:
        host = device_dir / name
        if host.exists():
            found.append(device_node(host, f"/dev/{name}"))
    return tuple(found)


def renumbered(environment: dict[str, str], devices: Sequence[DeviceNode]) -> dict[str, str]:
    """The visibility variables as seen inside: 0..k-1 once the GPUs' own nodes are bound."""
    per_gpu = [d for d in devices if d.path.startswith(("/dev/nvidia", "/dev/dri/render"))]
    per_gpu = [d for d in per_gpu if not d.path.removeprefix("/dev/").startswith(_NVIDIA_SHARED)]
    if not per_gpu:
        return dict(environment)
    listed = ",".join(str(i) for i in range(len(per_gpu)))
    shown = dict(environment)
    for name in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"):
        if name in shown:
            shown[name] = listed
    return shown
