"""The scheduler: GPUs (VRAM, vendor, model), CPU and memory; pure and deterministic, no I/O.

Build an :class:`AllocationMap` from the GridweaveJob/GridweaveEndpoint objects (informer
events: ``apply_job``, ``apply_endpoint``, ``remove``), a :class:`Scheduler` over it and the
inventory, then ask :meth:`Scheduler.schedule` for placements.
"""

from __future__ import annotations

from job_gateway.scheduler.allocations import (
    ENDPOINT_HOLDING_PHASES,
    JOB_HOLDING_PHASES,
    AllocationMap,
    endpoint_allocation,
    job_allocation,
)
from job_gateway.scheduler.gpu_models import model_matches
from job_gateway.scheduler.scheduler import (
    DEFAULT_AGING_S,
    DEFAULT_MAX_RESERVATIONS,
    Scheduler,
    rank_key,
    schedule,
)
from job_gateway.scheduler.types import (
    NO_DEFAULT_SLICE,
    POLICIES,
    REAL_GPU_BUSY,
    Allocation,
    AllocationKey,
    Decision,
    DefaultSlice,
    Fragmentation,
    Impossible,
    ImpossibleField,
    Kind,
    Placement,
    PlacementRequest,
    Policy,
    Reservation,
    Shape,
    Unplaced,
    endpoint_resource,
    endpoint_vram_mb,
)

__all__ = [
    "DEFAULT_AGING_S",
    "DEFAULT_MAX_RESERVATIONS",
    "ENDPOINT_HOLDING_PHASES",
    "JOB_HOLDING_PHASES",
    "NO_DEFAULT_SLICE",
    "POLICIES",
    "Allocation",
    "AllocationKey",
    "AllocationMap",
    "Decision",
    "DefaultSlice",
    "Fragmentation",
    "Impossible",
    "ImpossibleField",
    "Kind",
    "Placement",
    "PlacementRequest",
    "Policy",
    "REAL_GPU_BUSY",
    "Reservation",
    "Scheduler",
    "Shape",
    "Unplaced",
    "endpoint_allocation",
    "endpoint_resource",
    "endpoint_vram_mb",
    "job_allocation",
    "model_matches",
    "rank_key",
    "schedule",
]
