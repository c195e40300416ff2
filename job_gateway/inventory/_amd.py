"""AMD GPUs of this machine: through ``amdsmi`` when installed, else ``rocm-smi``'s JSON.

Both are guarded: without them (or without the driver) the probe finds no GPU. A GPU's
index is HIP's (``hip_id`` from amdsmi, ``cardN`` from rocm-smi), the one
``HIP_VISIBLE_DEVICES`` takes.
"""

from __future__ import annotations

import importlib
import json
import logging
import shutil
import subprocess
from collections.abc import Callable, Mapping
from typing import Any, Protocol, cast

from job_gateway.inventory.models import MAX_GPUS_PER_NODE, Gpu

__all__ = [
    "ROCM_SMI_COMMAND",
    "AmdSmiLibrary",
    "amd_gpus",
    "amdsmi_gpus",
    "load_amdsmi",
    "parse_rocm_smi",
    "run_rocm_smi",
]

_log = logging.getLogger(__name__)
_MIB = 2**20
ROCM_SMI_COMMAND = ("rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json")
_MODEL_KEYS = ("card series", "card model", "card sku", "marketing name")
_VRAM_KEY = "vram total memory (b)"


class AmdSmiLibrary(Protocol):
    """The part of ``amdsmi`` the probe calls (a test passes a fake)."""

    AmdSmiException: type[Exception]
    AmdSmiMemoryType: Any

    def amdsmi_init(self) -> None: ...
    def amdsmi_shut_down(self) -> None: ...
    def amdsmi_get_processor_handles(self) -> list[Any]: ...
    def amdsmi_get_gpu_asic_info(self, handle: Any) -> Mapping[str, Any]: ...
    def amdsmi_get_gpu_memory_total(self, handle: Any, mem_type: Any) -> int: ...
    def amdsmi_get_gpu_enumeration_info(self, handle: Any) -> Mapping[str, Any]: ...
    def amdsmi_get_gpu_memory_usage(self, handle: Any, mem_type: Any) -> int: ...
    def amdsmi_get_gpu_activity(self, handle: Any) -> Mapping[str, Any]: ...


def load_amdsmi() -> AmdSmiLibrary | None:
    """``amdsmi`` when it imports (it loads the ROCm library at import), else None."""
    try:
        module = importlib.import_module("amdsmi")
    except Exception as exc:  # ImportError, OSError, or the library's own
        _log.debug("amdsmi unavailable: %s", exc)
        return None
    return cast(AmdSmiLibrary, module)


def amdsmi_gpus(smi: AmdSmiLibrary, node: str) -> list[Gpu]:
    """Every AMD GPU amdsmi sees; none when it cannot start."""
    try:
        smi.amdsmi_init()
    except (smi.AmdSmiException, OSError) as exc:
        _log.debug("amdsmi could not start: %s", exc)
        return []
    try:
        gpus = []
        for position, handle in enumerate(smi.amdsmi_get_processor_handles()):
            try:
                gpu = _amdsmi_gpu(smi, node, position, handle)
            except smi.AmdSmiException as exc:
                _log.warning("AMD GPU %d skipped: %s", position, exc)
                continue
            if gpu is not None:
                gpus.append(gpu)
        return gpus
    except smi.AmdSmiException as exc:
        _log.warning("amdsmi failed while listing GPUs: %s", exc)
        return []
    finally:
        try:
            smi.amdsmi_shut_down()
        except smi.AmdSmiException as exc:
            _log.debug("amdsmi_shut_down: %s", exc)


def _amdsmi_gpu(smi: AmdSmiLibrary, node: str, position: int, handle: Any) -> Gpu | None:
    index = position
    try:
        hip_id = smi.amdsmi_get_gpu_enumeration_info(handle).get("hip_id")
    except (smi.AmdSmiException, AttributeError):  # older amdsmi: enumeration order
        hip_id = None
    if isinstance(hip_id, int) and 0 <= hip_id < MAX_GPUS_PER_NODE:
        index = hip_id
    total = int(smi.amdsmi_get_gpu_memory_total(handle, smi.AmdSmiMemoryType.VRAM))
    if total < _MIB:
        _log.warning("AMD GPU %d skipped: it reports %d bytes of VRAM", index, total)
        return None
    name = str(smi.amdsmi_get_gpu_asic_info(handle).get("market_name") or "").strip()
    used, busy = _amdsmi_measured(smi, handle, total)
    return Gpu(
        node=node,
        index=index,
        vendor="amd",
        model=name or "AMD GPU",
        vram_mb=total // _MIB,
        used_mb=used,
        utilization_percent=busy,
    )


def _amdsmi_measured(
    smi: AmdSmiLibrary, handle: Any, total: int
) -> tuple[int | None, float | None]:
    """(VRAM in use MiB, graphics activity %) as amdsmi reads them; None for either it does
    not have (an older library, an unsupported device: "N/A")."""
    try:
        used: int | None = (
            min(
                max(int(smi.amdsmi_get_gpu_memory_usage(handle, smi.AmdSmiMemoryType.VRAM)), 0),
                total,
            )
            // _MIB
        )
    except (smi.AmdSmiException, AttributeError, TypeError, ValueError):
        used = None
    try:
        busy: float | None = float(smi.amdsmi_get_gpu_activity(handle)["gfx_activity"])
    except (smi.AmdSmiException, AttributeError, KeyError, TypeError, ValueError):
        busy = None
    if busy is not None and not 0 <= busy <= 100:
        busy = None
    return used, busy


def run_rocm_smi(timeout_s: float = 10.0) -> str | None:
    """``rocm-smi``'s JSON about products and VRAM; None when it is missing or fails."""
    if shutil.which(ROCM_SMI_COMMAND[0]) is None:
        return None
    try:
        done = subprocess.run(
            ROCM_SMI_COMMAND, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        _log.warning("rocm-smi failed: %s", exc)
        return None
    if done.returncode != 0:
        _log.warning("rocm-smi exited with %d: %s", done.returncode, done.stderr.strip()[:200])
        return None
    return done.stdout


def parse_rocm_smi(output: str, node: str) -> list[Gpu]:
    """The GPUs in ``rocm-smi --showproductname --showmeminfo vram --json``'s output."""
    try:
        document = json.loads(output)
    except json.JSONDecodeError as exc:
        _log.warning("rocm-smi printed no JSON: %s", exc)
        return []
    if not isinstance(document, dict):
        return []
    gpus = []
    for card, fields in document.items():
        index = _card_index(card)
        if index is None or not isinstance(fields, dict):
            continue  # "system" and other non-card sections
        lowered = {str(key).strip().lower(): value for key, value in fields.items()}
        try:
            total = int(str(lowered.get(_VRAM_KEY, "")).strip())
        except ValueError:
            _log.warning("rocm-smi: %s has no VRAM total; skipped", card)
            continue
        if total < _MIB:
            _log.warning("rocm-smi: %s reports %d bytes of VRAM; skipped", card, total)
            continue
        model = next(
            (str(lowered[key]).strip() for key in _MODEL_KEYS if str(lowered.get(key, "")).strip()),
            "AMD GPU",
        )
        gpus.append(Gpu(node=node, index=index, vendor="amd", model=model, vram_mb=total // _MIB))
    return sorted(gpus, key=lambda gpu: gpu.index)


def _card_index(card: str) -> int | None:
    if not card.startswith("card") or not card[4:].isdigit():
        return None
    index = int(card[4:])
    return index if index < MAX_GPUS_PER_NODE else None


def amd_gpus(
    node: str,
    *,
    amdsmi: AmdSmiLibrary | None,
    rocm_smi: Callable[[], str | None] | None,
) -> list[Gpu]:
    """AMD GPUs through amdsmi when given and it finds some, else through rocm-smi."""
    if amdsmi is not None:
        gpus = amdsmi_gpus(amdsmi, node)
        if gpus:
            return gpus
    if rocm_smi is not None:
        output = rocm_smi()
        if output:
            return parse_rocm_smi(output, node)
    return []
