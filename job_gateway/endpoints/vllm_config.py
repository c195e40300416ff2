"""The gateway's side of the ``vllm`` mode: whether this cluster serves it, and how a
replica launches vLLM (``VllmLaunch``, carried to the replica in its ``ReplicaConfig``).

vLLM runs from its own virtualenv (``GATEWAY_VLLM_PYTHON``). Without a real GPU in the
inventory only vLLM's CPU build can serve, which a cluster opts into with
``GATEWAY_VLLM_ALLOW_CPU`` (tests, CPU-only clusters); otherwise such a cluster refuses the
mode. On real GPUs vLLM may take the endpoint's share of each placed GPU's memory, never the
whole GPU (other jobs and endpoints hold the rest).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from job_gateway.endpoints.replica import VllmLaunch
from job_gateway.endpoints.settings import EndpointSettings
from job_gateway.inventory import Inventory

__all__ = ["vllm_launch", "vllm_refusal"]

#: vLLM's memory share is never set above this: its own bookkeeping needs a margin.
_MAX_GPU_FRACTION = 0.95


def vllm_refusal(settings: EndpointSettings, inventory: Inventory) -> str | None:
    """Why mode vllm cannot be served on this cluster, or None when it can."""
    has_gpu = any(not gpu.simulated for node in inventory.nodes for gpu in node.gpus)
    if not has_gpu and not settings.vllm_allow_cpu:
        return "vllm needs a real GPU and this cluster has none; use mode transformers on CPU"
    if not settings.vllm_python:
        return (
            "vllm is not installed on this cluster (the gateway has no GATEWAY_VLLM_PYTHON); "
            "use mode transformers"
        )
    return None


def vllm_launch(
    settings: EndpointSettings,
    inventory: Inventory,
    *,
    node: str,
    indices: Sequence[int],
    vram_mb: int,
) -> VllmLaunch:
    """How the replica placed on ``indices`` of ``node`` starts vLLM for ``vram_mb`` each."""
    found = inventory.node(node)
    listed = {gpu.index: gpu for gpu in (found.gpus if found is not None else ())}
    placed = [listed[i] for i in indices if i in listed]
    fraction: float | None = None
    if placed and not any(gpu.simulated for gpu in placed):
        smallest = min(gpu.vram_mb for gpu in placed)
        fraction = min(_MAX_GPU_FRACTION, vram_mb / smallest)
    return VllmLaunch(
        python=settings.vllm_python,
        args=tuple(shlex.split(settings.vllm_args)),
        gpu_memory_fraction=fraction,
        # on CPU the endpoint's vramMb is its memory: half of it for the KV cache
        cpu_kv_cache_gib=max(1, vram_mb // 2048),
    )
