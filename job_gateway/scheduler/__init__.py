"""The VRAM-aware scheduler: pure and deterministic, no I/O.

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
from job_gateway.scheduler.scheduler import (
    DEFAULT_AGING_S,
    DEFAULT_MAX_RESERVATIONS,
    Scheduler,
    rank_key,
    schedule,
)
from job_gateway.scheduler.types import (
    REAL_GPU_BUSY,
    Allocation,
    AllocationKey,
    Decision,
    Fragmentation,
    Impossible,
    Kind,
    Placement,
    PlacementRequest,
    Policy,
    Reservation,
    Unplaced,
    endpoint_vram_mb,
)

__all__ = [
    "DEFAULT_AGING_S",
    "DEFAULT_MAX_RESERVATIONS",
    "ENDPOINT_HOLDING_PHASES",
    "JOB_HOLDING_PHASES",
    "Allocation",
    "AllocationKey",
    "AllocationMap",
    "Decision",
    "Fragmentation",
    "Impossible",
    "Kind",
    "Placement",
    "PlacementRequest",
    "Policy",
    "REAL_GPU_BUSY",
    "Reservation",
    "Scheduler",
    "Unplaced",
    "endpoint_allocation",
    "endpoint_vram_mb",
    "job_allocation",
    "rank_key",
    "schedule",
]
