"""Node loss: the jobs of a node that is gone or NotReady are requeued after a grace period.

The rule (:func:`decide_node_loss`, pure): a node is lost when the inventory no longer lists
it (it left, or was removed) or lists it NotReady (its heartbeats stopped). A cordoned node
is not lost: cordon means no new work, and what runs there stays. Every job Allocated or
Running on a node that has been lost for at least the grace period, by the gateway's own
observations, is requeued (Pending, ``attempts`` + 1, reason ``NodeLost``) while retries
remain, else Failed ``NodeLost`` (:func:`job_gateway.requeue.requeue_or_fail`). A node seen
ready again before the grace period ends loses nothing.

The first-seen-lost times are the only memory, kept by :class:`NodeLossWatch` between
inventory reads; a restarted gateway starts them afresh from the CRDs and the inventory,
so a restart only delays a requeue by one grace period, never repeats or loses one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from gridweave_controller.errors import Conflict, InvalidTransition, NotFound
from gridweave_controller.models import Job
from gridweave_controller.operations import AsyncClientBase
from gridweave_controller.phases import JobPhase
from job_gateway.inventory import Inventory
from job_gateway.requeue import requeue_or_fail

__all__ = [
    "NODE_LOST",
    "HandOver",
    "NodeLossDecision",
    "NodeLossWatch",
    "decide_node_loss",
    "node_is_lost",
]

_log = logging.getLogger(__name__)

#: The reason a job requeued (or failed) for its node's loss carries.
NODE_LOST = "NodeLost"
_ON_A_NODE = frozenset({JobPhase.ALLOCATED, JobPhase.RUNNING})
#: Gives a lost job to whoever runs it (the executor, which kills its worker first);
#: False when it does not follow that attempt.
HandOver = Callable[[Job, str], bool]


def node_is_lost(inventory: Inventory, name: str) -> bool:
    """The node is not in the inventory, or it is NotReady (cordoned is not lost)."""
    node = inventory.node(name)
    return node is None or not node.ready


@dataclass(frozen=True, slots=True)
class NodeLossDecision:
    """What one look at the inventory decides.

    ``lost_since``: the lost nodes that hold jobs, and since when they are seen lost (keep it
    for the next look); ``requeue``: the jobs to requeue now, each with its message.
    """

    lost_since: dict[str, float]
    requeue: tuple[tuple[Job, str], ...]


def decide_node_loss(
    inventory: Inventory,
    jobs: Iterable[Job],
    *,
    now: float,
    lost_since: Mapping[str, float],
    grace_s: float,
) -> NodeLossDecision:
    """Which Allocated or Running jobs to requeue now, and the lost nodes' first-seen times."""
    seen: dict[str, float] = {}
    requeue: list[tuple[Job, str]] = []
    for job in jobs:
        node = job.status.node
        if job.phase not in _ON_A_NODE or not node or not node_is_lost(inventory, node):
            continue
        since = seen.setdefault(node, lost_since.get(node, now))
        if now - since >= grace_s:
            requeue.append((job, _lost_message(inventory, node, now - since)))
    return NodeLossDecision(seen, tuple(requeue))


def _lost_message(inventory: Inventory, node: str, lost_for: float) -> str:
    state = "gone from the inventory" if inventory.node(node) is None else "NotReady"
    return f"node {node} is {state} (for {lost_for:.0f} s)"


class NodeLossWatch:
    """Applies :func:`decide_node_loss` at every inventory read and requeues what it decides."""

    def __init__(
        self,
        crd: AsyncClientBase,
        *,
        grace_s: float,
        hand_over: HandOver | None = None,
        max_parallel: int = 32,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``hand_over`` None: nothing runs jobs here, so there is no worker to kill."""
        self._crd = crd
        self._grace_s = grace_s
        self._hand_over = hand_over
        self._clock = clock
        self._writes = asyncio.Semaphore(max_parallel)
        self.lost_since: dict[str, float] = {}

    async def check(self, inventory: Inventory, jobs: Iterable[Job]) -> int:
        """Look at a fresh inventory; returns how many jobs were requeued or failed here."""
        decision = decide_node_loss(
            inventory,
            jobs,
            now=self._clock(),
            lost_since=self.lost_since,
            grace_s=self._grace_s,
        )
        self.lost_since = decision.lost_since
        written = await asyncio.gather(*(self._requeue(j, m) for j, m in decision.requeue))
        return sum(written)

    async def _requeue(self, job: Job, message: str) -> bool:
        _log.warning("job %s: %s", job.name, message)
        if self._hand_over is not None and self._hand_over(job, message):
            return False  # the executor kills the worker, then writes
        async with self._writes:
            try:
                fresh = await self._crd.get_job(job.name)
                if fresh.phase not in _ON_A_NODE or (
                    (fresh.status.node, fresh.status.attempts)
                    != (job.status.node, job.status.attempts)
                ):
                    return False  # moved on since the informer's copy
                await requeue_or_fail(self._crd, fresh, NODE_LOST, message)
            except (NotFound, InvalidTransition, Conflict) as error:
                _log.info("job %s moved on: %s", job.name, error)
                return False
            except Exception:  # the next inventory read decides again
                _log.exception("job %s: the NodeLost write failed", job.name)
                return False
        return True
