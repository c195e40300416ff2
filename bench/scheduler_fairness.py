"""Fair share over a saturated hour: two users, one submitting ten times more than the other.

A simulated cluster of 8 nodes x 8 GPUs of 80 GiB (128 cores, 1 TiB each). Both users submit
the same mix (1, 2 or 4 GPUs at 70/20/10%, 16-80 GiB per GPU, 4 cores and 16 GiB per GPU,
running 1-9 minutes); ``light`` at a rate that alone would ask 75% of the VRAM, ``heavy`` at
ten times that, as Poisson arrivals, so both always have work waiting. A pass runs every 10
simulated seconds (reservations passed back, as the gateway runs it), after 5 minutes of
warm-up the hour is measured: each user's VRAM x GPUs held, integrated over time, as a
fraction of what both held. The goal is each user within 5% of its share (half each; with
weights, in proportion). Without fair share (every request in one queue, oldest first), the
heavy user takes what its submissions ask.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass

from job_gateway.inventory import Gpu, Inventory, Node
from job_gateway.scheduler import AllocationKey, PlacementRequest, Reservation, Scheduler

__all__ = ["Outcome", "simulate"]

GIB = 1024
USERS = ("light", "heavy")
WARMUP_S = 300.0
HOUR_S = 3600.0
PASS_S = 10.0
_COUNTS, _COUNT_WEIGHTS = (1, 2, 4), (70, 20, 10)
_SIZES = (16, 24, 40, 80)  # GiB per GPU
_SECONDS = (60, 540)


@dataclass(frozen=True)
class Outcome:
    """What each user held over the measured hour."""

    fractions: Mapping[str, float]  # of what both held (VRAM x GPUs x seconds)
    utilization: float  # of the cluster's VRAM, both users together
    submitted: Mapping[str, int]
    placed: Mapping[str, int]


def _cluster(nodes: int = 8) -> Inventory:
    return Inventory(
        nodes=tuple(
            Node(
                name=f"n{n}",
                gpus=tuple(
                    Gpu(node=f"n{n}", index=i, vendor="nvidia", model="H100", vram_mb=80 * GIB)
                    for i in range(8)
                ),
                cpu_millis=128_000,
                memory_mb=1024 * GIB,
            )
            for n in range(nodes)
        )
    )


def _job(rng: random.Random, user: str, serial: int, at: float, fair: bool) -> PlacementRequest:
    count = rng.choices(_COUNTS, _COUNT_WEIGHTS)[0]
    return PlacementRequest(
        f"{user}-{serial:06d}",
        rng.choice(_SIZES) * GIB,
        count,
        submitted_at=at,
        cpu_millis=4_000 * count,
        memory_mb=16 * GIB * count,
        user=user if fair else "",
    )


def simulate(
    *, fair: bool = True, weights: Mapping[str, float] | None = None, seed: int = 0
) -> Outcome:
    """One run; ``fair=False`` puts every request in one queue (no users)."""
    rng = random.Random(seed)
    inventory = _cluster()
    capacity = sum(gpu.vram_mb for gpu in inventory.gpus())
    scheduler = Scheduler(inventory, shares=weights or {})
    mean_ask = (
        (sum(c * w for c, w in zip(_COUNTS, _COUNT_WEIGHTS, strict=True)) / sum(_COUNT_WEIGHTS))
        * (sum(_SIZES) / len(_SIZES) * GIB)
        * (sum(_SECONDS) / 2)
    )
    light_rate = 0.75 * capacity / mean_ask  # jobs per second
    rates = {"light": light_rate, "heavy": 10 * light_rate}
    next_at = {user: rng.expovariate(rates[user]) for user in USERS}
    owner: dict[AllocationKey, str] = {}
    ends: dict[AllocationKey, float] = {}
    waiting: dict[AllocationKey, PlacementRequest] = {}
    reservations: dict[AllocationKey, Reservation] = {}
    held = dict.fromkeys(USERS, 0.0)
    submitted = dict.fromkeys(USERS, 0)
    placed = dict.fromkeys(USERS, 0)
    holding = dict.fromkeys(USERS, 0)
    serial = 0
    now = 0.0
    while now < WARMUP_S + HOUR_S:
        now += PASS_S
        for key in [k for k, end in ends.items() if end <= now]:
            del ends[key]
            allocation = scheduler.allocations.get(key)
            if allocation is not None:
                holding[owner[key]] -= allocation.vram_mb * len(allocation.gpu_indices)
            scheduler.allocations.remove(key)
        for user in USERS:
            while next_at[user] <= now:
                serial += 1
                job = _job(rng, user, serial, next_at[user], fair)
                waiting[job.key] = job
                owner[job.key] = user
                if now > WARMUP_S:
                    submitted[user] += 1
                next_at[user] += rng.expovariate(rates[user])
        decision = scheduler.schedule(list(waiting.values()), now=now, reservations=reservations)
        reservations = dict(decision.reservations)
        for placement in decision.placements:
            scheduler.allocations.put(placement.allocation(provisional=False))
            del waiting[placement.key]
            ends[placement.key] = now + rng.uniform(*_SECONDS)
            user = owner[placement.key]
            holding[user] += placement.request.vram_mb * placement.request.gpu_count
            if now > WARMUP_S:
                placed[user] += 1
        if now > WARMUP_S:
            for user in USERS:
                held[user] += holding[user] * PASS_S
    scheduler.close()
    both = sum(held.values())
    return Outcome(
        fractions={user: held[user] / both for user in USERS},
        utilization=both / (capacity * HOUR_S),
        submitted=submitted,
        placed=placed,
    )
