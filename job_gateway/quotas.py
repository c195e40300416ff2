"""Per-user quotas: what a user holds at once, and the check a submission passes first.

A user holds the GPUs and VRAM of its unfinished jobs (Pending included: a queued job is
admitted and will hold them) and of its endpoints that are not Stopped or Failed (an
endpoint holds ``gpu_count`` GPUs with VRAM for ``max_replicas`` replicas on each). The
gateway reads this from its informers, which follow every GridweaveJob and
GridweaveEndpoint, plus what it created itself that they have not brought back yet; checks
of one user run one at a time, so two submissions racing cannot both pass on the same room.

A map's workers are checked as one submission: each worker asks for the whole map and the
user's holding leaves out the map's own workers, so a map past the quota is refused whole
(every worker answers the same) and one within it is admitted whole.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Protocol, TypeVar

from gridweave_clients.gateway.quotas import UserQuotaModel
from gridweave_controller.models import Endpoint, Job
from gridweave_controller.phases import JOB_TERMINAL_PHASES, EndpointPhase, EndpointStopReason
from job_gateway.errors import QuotaExceeded
from job_gateway.scheduler.types import endpoint_vram_mb

__all__ = [
    "Holding",
    "QuotaBook",
    "admitted",
    "check_quota",
    "deployed_holding",
    "endpoint_holding",
    "job_holding",
]

_T_co = TypeVar("_T_co", covariant=True)


class _Objects(Protocol[_T_co]):
    """What the quota book reads of an informer."""

    def list(self) -> Sequence[_T_co]: ...

    def get(self, name: str) -> _T_co | None: ...


_Clock = Callable[[], float]
_ENDED_ENDPOINTS = frozenset({EndpointPhase.STOPPED, EndpointPhase.FAILED})
# how long an object this gateway created counts on its own before the informers bring it
_MADE_TTL_S = 120.0


@dataclass(frozen=True)
class Holding:
    """GPUs and VRAM (MiB, over all of them) held or asked for."""

    gpus: int = 0
    vram_mb: int = 0

    def __add__(self, other: Holding) -> Holding:
        return Holding(self.gpus + other.gpus, self.vram_mb + other.vram_mb)

    def times(self, count: int) -> Holding:
        """``count`` of this."""
        return Holding(self.gpus * count, self.vram_mb * count)


def job_holding(job: Job) -> Holding:
    """What an unfinished job holds (nothing once it has finished)."""
    if job.phase in JOB_TERMINAL_PHASES:
        return Holding()
    return Holding(job.spec.gpu_count, job.spec.vram_mb * job.spec.gpu_count)


def endpoint_holding(endpoint: Endpoint) -> Holding:
    """What a deployed endpoint holds (nothing once Stopped or Failed)."""
    if endpoint.phase in _ENDED_ENDPOINTS:
        return Holding()
    return deployed_holding(endpoint)


def deployed_holding(endpoint: Endpoint) -> Holding:
    """What ``endpoint`` holds while deployed, whatever its phase now (a woken one's)."""
    spec = endpoint.spec
    per_gpu = endpoint_vram_mb(spec.vram_mb, spec.max_replicas)
    return Holding(spec.gpu_count, per_gpu * spec.gpu_count)


def _counted(kind: str, made: Job | Endpoint | None) -> bool:
    """Whether the informer's copy of an object made (or woken) here counts what it holds:
    a job's or a deployed endpoint's does; a woken endpoint still Stopped (reason Idle: not
    placed yet) does not, so the admission keeps counting it."""
    if made is None:
        return False
    if kind == "job" or not isinstance(made, Endpoint):
        return True
    waking = made.phase is EndpointPhase.STOPPED and made.status.reason == EndpointStopReason.IDLE
    return not waking


def check_quota(quota: UserQuotaModel, *, in_use: Holding, asked: Holding) -> None:
    """QuotaExceeded naming the first quota ``in_use`` + ``asked`` would pass."""
    for name, limit, held, more, unit in (
        ("max_gpus", quota.max_gpus, in_use.gpus, asked.gpus, "GPUs"),
        ("max_vram_mb", quota.max_vram_mb, in_use.vram_mb, asked.vram_mb, "MiB of VRAM"),
    ):
        if limit is not None and held + more > limit:
            raise QuotaExceeded(
                f"quota {name} is {limit} {unit}: the user holds {held} and asks {more} more",
                quota=name,
                limit=limit,
                in_use=held,
                asked=more,
            )


class QuotaBook:
    """Each user's holding from the informers' objects, and the check before a creation."""

    def __init__(
        self,
        jobs: _Objects[Job],
        endpoints: _Objects[Endpoint],
        *,
        clock: _Clock = time.monotonic,
    ) -> None:
        self._jobs = jobs
        self._endpoints = endpoints
        self._clock = clock
        self._locks: dict[str, asyncio.Lock] = {}
        # (kind, name) -> (user, holding, when): created here, not yet in the informer
        self._made: dict[tuple[str, str], tuple[str, Holding, float]] = {}

    def held(
        self, user_id: str, *, without_map: str | None = None, without_endpoint: str | None = None
    ) -> Holding:
        """What ``user_id`` holds now, leaving out one map's workers or one endpoint."""
        total = Holding()
        for job in self._jobs.list():
            if job.spec.user_id != user_id:
                continue
            if without_map is not None and job.spec.map is not None:
                if job.spec.map.map_id == without_map:
                    continue
            total += job_holding(job)
        for endpoint in self._endpoints.list():
            if endpoint.spec.user_id == user_id and endpoint.name != without_endpoint:
                total += endpoint_holding(endpoint)
        now = self._clock()
        for key, (owner, holding, made_at) in list(self._made.items()):
            kind, name = key
            source: _Objects[Job] | _Objects[Endpoint] = (
                self._jobs if kind == "job" else self._endpoints
            )
            if _counted(kind, source.get(name)) or now - made_at > _MADE_TTL_S:
                del self._made[key]  # counted above from now on (or long gone)
                continue
            if owner != user_id or (kind == "endpoint" and name == without_endpoint):
                continue
            if without_map is not None and kind == "job" and name.startswith(f"{without_map}-w"):
                continue
            total += holding
        return total

    @asynccontextmanager
    async def admit(
        self,
        *,
        user_id: str,
        quota: UserQuotaModel | None,
        kind: str,
        name: str,
        holding: Holding,
        asked: Holding | None = None,
        map_id: str | None = None,
    ) -> AsyncIterator[None]:
        """Check ``quota`` and run the block that creates ``name``, one check of the user
        at a time; ``asked`` (default ``holding``) is what the check counts, ``holding``
        what the object holds once made. No quota: no check, no waiting."""
        if quota is None or (quota.max_gpus is None and quota.max_vram_mb is None):
            yield
            return
        lock = self._locks.setdefault(user_id, asyncio.Lock())
        async with lock:
            in_use = self.held(
                user_id, without_map=map_id, without_endpoint=name if kind == "endpoint" else None
            )
            check_quota(quota, in_use=in_use, asked=holding if asked is None else asked)
            yield
            self._made[(kind, name)] = (user_id, holding, self._clock())


@asynccontextmanager
async def admitted(
    book: QuotaBook | None,
    *,
    user_id: str,
    quota: UserQuotaModel | None,
    kind: str,
    name: str,
    holding: Holding,
    asked: Holding | None = None,
    map_id: str | None = None,
) -> AsyncIterator[None]:
    """:meth:`QuotaBook.admit`, or no check without a book (a gateway built without one)."""
    if book is None:
        yield
        return
    async with book.admit(
        user_id=user_id,
        quota=quota,
        kind=kind,
        name=name,
        holding=holding,
        asked=asked,
        map_id=map_id,
    ):
        yield
