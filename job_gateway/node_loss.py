"""Node loss: the jobs of a node that is gone or NotReady are requeued after a grace period,
and its endpoints are sent back to placement.

The rule (:func:`decide_node_loss`, pure): a node is lost when the inventory no longer lists
it (it left, or was removed) or lists it NotReady (its heartbeats stopped). A cordoned node
is not lost: cordon means no new work, and what runs there stays. Every job Allocated or
Running on a node that has been lost for at least the grace period, by the gateway's own
observations, is requeued (Pending, ``attempts`` + 1, reason ``NodeLost``) while retries
remain, else Failed ``NodeLost`` (:func:`job_gateway.requeue.requeue_or_fail`). A node seen
ready again before the grace period ends loses nothing.

An endpoint Deploying or Running on a lost node, after the same grace period, goes back to
Pending with reason ``NodeLost`` (``set_endpoint_pending``: its run, if it ran, ends there
for billing, and the allocation map frees its VRAM). The scheduling loop places it again on
a node that fits, or it waits Pending; the reconciler deletes its Serve application.

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
from gridweave_controller.models import Endpoint, Job
from gridweave_controller.operations import AsyncClientBase
from gridweave_controller.phases import EndpointPhase, JobPhase
from job_gateway.inventory import Inventory
from job_gateway.requeue import lost_seconds, requeue_or_fail

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
_ENDPOINT_ON_A_NODE = frozenset({EndpointPhase.DEPLOYING, EndpointPhase.RUNNING})
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

    ``lost_since``: the lost nodes that hold jobs or endpoints, and since when they are seen
    lost (keep it for the next look); ``requeue``: the jobs to requeue now, each with its
    message; ``replace``: the endpoints to send back to placement now, likewise.
    """

    lost_since: dict[str, float]
    requeue: tuple[tuple[Job, str], ...]
    replace: tuple[tuple[Endpoint, str], ...] = ()


def decide_node_loss(
    inventory: Inventory,
    jobs: Iterable[Job],
    *,
    now: float,
    lost_since: Mapping[str, float],
    grace_s: float,
    endpoints: Iterable[Endpoint] = (),
) -> NodeLossDecision:
    """Which Allocated or Running jobs to requeue now, which Deploying or Running endpoints to
    place again, and the lost nodes' first-seen times."""
    seen: dict[str, float] = {}

    def lost_for(node: str | None, on_a_node: bool) -> tuple[str, float] | None:
        if not on_a_node or not node or not node_is_lost(inventory, node):
            return None
        return node, now - seen.setdefault(node, lost_since.get(node, now))

    requeue: list[tuple[Job, str]] = []
    for job in jobs:
        lost = lost_for(job.status.node, job.phase in _ON_A_NODE)
        if lost is not None and lost[1] >= grace_s:
            requeue.append((job, _lost_message(inventory, *lost)))
    replace: list[tuple[Endpoint, str]] = []
    for endpoint in endpoints:
        lost = lost_for(endpoint.status.node, endpoint.phase in _ENDPOINT_ON_A_NODE)
        if lost is not None and lost[1] >= grace_s:
            replace.append((endpoint, _lost_message(inventory, *lost)))
    return NodeLossDecision(seen, tuple(requeue), tuple(replace))


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

    async def check(
        self, inventory: Inventory, jobs: Iterable[Job], endpoints: Iterable[Endpoint] = ()
    ) -> int:
        """Look at a fresh inventory; returns how many jobs were requeued or failed and
        endpoints sent back to placement here."""
        decision = decide_node_loss(
            inventory,
            jobs,
            now=self._clock(),
            lost_since=self.lost_since,
            grace_s=self._grace_s,
            endpoints=endpoints,
        )
        self.lost_since = decision.lost_since
        written = await asyncio.gather(
            *(self._requeue(j, m) for j, m in decision.requeue),
            *(self._replace(e, m) for e, m in decision.replace),
        )
        return sum(written)

    async def _replace(self, endpoint: Endpoint, message: str) -> bool:
        _log.warning("endpoint %s: %s", endpoint.name, message)
        async with self._writes:
            try:
                fresh = await self._crd.get_endpoint(endpoint.name)
                if fresh.phase not in _ENDPOINT_ON_A_NODE or (
                    fresh.status.node != endpoint.status.node
                ):
                    return False  # moved on since the informer's copy
                await self._crd.set_endpoint_pending(
                    endpoint.name, NODE_LOST, f"{message}; placed again"
                )
            except (NotFound, InvalidTransition, Conflict) as error:
                _log.info("endpoint %s moved on: %s", endpoint.name, error)
                return False
            except Exception:  # the next inventory read decides again
                _log.exception("endpoint %s: the NodeLost write failed", endpoint.name)
                return False
        return True

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
                await requeue_or_fail(
                    self._crd,
                    fresh,
                    NODE_LOST,
                    message,
                    wall_seconds=lost_seconds(fresh, time.time()),
                )
            except (NotFound, InvalidTransition, Conflict) as error:
                _log.info("job %s moved on: %s", job.name, error)
                return False
            except Exception:  # the next inventory read decides again
                _log.exception("job %s: the NodeLost write failed", job.name)
                return False
        return True
