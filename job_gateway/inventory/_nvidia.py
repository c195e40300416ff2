"""NVIDIA GPUs of this machine through NVML (``nvidia-ml-py``, imported as ``pynvml``), with
the VRAM in use and how busy each was when read (``used_mb``, ``utilization_percent``).

The import is guarded: without the package or the driver, the probe finds no GPU. NVML
numbers devices in PCI bus order; the executor sets ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` so that
CUDA's indices are the same ones.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any, Protocol, cast

from job_gateway.inventory.models import Gpu

__all__ = ["NvmlLibrary", "load_nvml", "nvidia_gpus"]

_log = logging.getLogger(__name__)
_MIB = 2**20


class NvmlLibrary(Protocol):
    """The part of ``pynvml`` the probe calls (a test passes a fake)."""

    NVMLError: type[Exception]

    def nvmlInit(self) -> None: ...  # noqa: N802 (NVML's names)
    def nvmlShutdown(self) -> None: ...  # noqa: N802
    def nvmlDeviceGetCount(self) -> int: ...  # noqa: N802
    def nvmlDeviceGetHandleByIndex(self, index: int) -> Any: ...  # noqa: N802
    def nvmlDeviceGetName(self, handle: Any) -> str | bytes: ...  # noqa: N802
    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any: ...  # noqa: N802
    def nvmlDeviceGetUtilizationRates(self, handle: Any) -> Any: ...  # noqa: N802


def load_nvml() -> NvmlLibrary | None:
    """``pynvml`` when installed, else None."""
    try:
        module = importlib.import_module("pynvml")
    except ImportError:
        return None
    return cast(NvmlLibrary, module)


def _utilization(nvml: NvmlLibrary, handle: Any) -> float | None:
    """The GPU's busy share of NVML's last sample period, %; None where NVML has none (some
    devices, MIG instances)."""
    try:
        percent = float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
    except (nvml.NVMLError, AttributeError, TypeError, ValueError) as exc:
        _log.debug("NVML utilization unavailable: %s", exc)
        return None
    return percent if 0 <= percent <= 100 else None


def nvidia_gpus(nvml: NvmlLibrary, node: str) -> list[Gpu]:
    """Every NVIDIA GPU NVML sees, in NVML order; none when NVML cannot start."""
    try:
        nvml.nvmlInit()
    except (nvml.NVMLError, OSError) as exc:
        _log.debug("NVML unavailable: %s", exc)
        return []
    try:
        gpus = []
        for index in range(nvml.nvmlDeviceGetCount()):
            try:
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                name = nvml.nvmlDeviceGetName(handle)
                memory = nvml.nvmlDeviceGetMemoryInfo(handle)
                total, used = int(memory.total), int(memory.used)
            except nvml.NVMLError as exc:  # one lost GPU does not hide the others
                _log.warning("NVIDIA GPU %d skipped: %s", index, exc)
                continue
            if total < _MIB:
                _log.warning("NVIDIA GPU %d skipped: it reports %d bytes of VRAM", index, total)
                continue
            model = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
            gpus.append(
                Gpu(
                    node=node,
                    index=index,
                    vendor="nvidia",
                    model=model.strip() or "NVIDIA GPU",
                    vram_mb=total // _MIB,
                    used_mb=min(max(used, 0), total) // _MIB,
                    utilization_percent=_utilization(nvml, handle),
                )
            )
        return gpus
    except nvml.NVMLError as exc:
        _log.warning("NVML failed while listing GPUs: %s", exc)
        return []
    finally:
        try:
            nvml.nvmlShutdown()
        except nvml.NVMLError as exc:
            _log.debug("nvmlShutdown: %s", exc)
