"""Warm workers: a job starts in an actor whose process already runs.

Starting a Ray actor's process takes most of a second, longer than a small function runs.
Two kinds of idle workers are kept on each node, both :class:`JobWorker` actors, detached
and pinned to their node like every worker:

- **spares**, started ahead, which have run nothing: any user's attempt may take one;
- **released** workers, whose attempt finished: only the same user's next attempt with the
  same GPU visibility may take one (its globals and imports stay warm). Users never share
  a process: a worker serves one user for its whole life.

An idle worker exits by itself after ``idle_seconds`` (:class:`JobWorker`'s watchdog), so a
gateway that dies leaves nothing behind for long; this pool hands out only workers idle for
less than that, minus a margin, so it never hands out one about to exit.

The actor an attempt ran in is recorded in the object store before it runs
(``jobs/<id>/attempt-<n>/worker``): a restarted gateway finds it there (else by the
attempt's own actor name, ``gw-job-<id>-<n>``).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import ray
from ray.actor import ActorHandle

from gridweave_runtime.storage import ObjectNotFound, ObjectStore
from job_gateway.execution.actors import (
    NAMESPACE,
    NODE_LABEL,
    RunningAttempt,
    actor_alive,
    actor_name,
    kill_actor,
    remote_worker,
)
from job_gateway.execution.worker import AttemptSpec, JobWorker

__all__ = [
    "SPARE_PREFIX",
    "IdleWorker",
    "WarmPool",
    "recorded_worker",
    "worker_key",
    "worker_name",
]

SPARE_PREFIX = "gw-spare-"
#: A worker idle this close to its exit is not handed out any more.
_EXIT_MARGIN_S = 5.0

Environment = tuple[tuple[str, str], ...]


def worker_key(job_id: str, attempt: int) -> str:
    """The record of the actor that took attempt ``attempt`` of the job."""
    return f"jobs/{job_id}/attempt-{attempt}/worker"


def recorded_worker(store: ObjectStore, job_id: str, attempt: int) -> str | None:
    """The actor the attempt was handed to, as recorded before it ran; None: never handed."""
    try:
        return store.get(store.uri(worker_key(job_id, attempt))).decode()
    except ObjectNotFound:
        return None


def worker_name(store: ObjectStore, job_id: str, attempt: int) -> str:
    """The actor of an attempt: the recorded one, else the attempt's own name."""
    return recorded_worker(store, job_id, attempt) or actor_name(job_id, attempt)


def environment_key(environment: dict[str, str]) -> Environment:
    """The GPU visibility a worker was set up with, as a comparable key."""
    return tuple(sorted(environment.items()))


@dataclass(frozen=True, slots=True)
class IdleWorker:
    """An idle worker on ``node``: a spare (``user`` None) or one a user's attempt released."""

    name: str
    node: str
    actor: ActorHandle[JobWorker]
    ready: ray.ObjectRef  # type: ignore[type-arg]
    idle_since: float
    user: str | None = None
    environment: Environment = ()


@dataclass
class WarmPool:
    """Per node: ``spares`` fresh workers kept started, at most ``max_idle`` idle in all."""

    store: ObjectStore
    spares: int
    max_idle: int
    idle_seconds: float
    boot: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    clock: Callable[[], float] = time.monotonic
    _idle: dict[str, list[IdleWorker]] = field(default_factory=dict)
    _made: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, node: str, user: str, environment: dict[str, str]) -> IdleWorker | None:
        """The user's own released worker with the same GPU visibility, else a started
        spare; removed from the pool. None when neither is there."""
        key = environment_key(environment)
        with self._lock:
            idle = self._fresh(node)
            own = [w for w in idle if w.user == user and w.environment == key]
            spares = [w for w in idle if w.user is None]
            started: list[ray.ObjectRef[None]] = []
            if spares:
                started, _ = ray.wait(
                    [w.ready for w in spares], num_returns=len(spares), timeout=0, fetch_local=False
                )
            # the warmest own worker first, then the started spares; a worker whose node
            # died meanwhile (a node that left, or was killed and came back before the
            # pool heard of it) is dropped, never handed an attempt
            for worker in [*reversed(own), *(w for w in spares if w.ready in started)]:
                idle.remove(worker)
                if actor_alive(worker.actor):
                    return worker
                kill_actor(worker.actor)
            return None

    def hand_over(self, worker: IdleWorker, spec: AttemptSpec) -> RunningAttempt:
        """Record that ``worker`` takes the attempt, then run it there."""
        self.store.put(worker_key(spec.job_id, spec.attempt), worker.name.encode())
        run: ray.ObjectRef[None] = worker.actor.run.remote(spec)
        return RunningAttempt(worker.name, worker.actor, run, worker.ready)

    def release(
        self, run: RunningAttempt, node: str, user: str, environment: dict[str, str]
    ) -> bool:
        """Keep a worker whose attempt ended, for the same user's next one; False: no room
        (the caller kills it)."""
        worker = IdleWorker(
            run.name, node, run.actor, run.ready, self.clock(), user, environment_key(environment)
        )
        with self._lock:
            idle = self._fresh(node)
            if len(idle) >= self.max_idle:
                return False
            idle.append(worker)
            return True

    def refill(self, nodes: Iterable[str]) -> int:
        """Start spares until each of ``nodes`` has ``spares``; stop the idle workers of other
        nodes. How many were started."""
        wanted = set(nodes)
        started = 0
        with self._lock:
            for node in [n for n in self._idle if n not in wanted]:
                for worker in self._idle.pop(node):
                    kill_actor(worker.actor)
            for node in sorted(wanted):
                idle = self._fresh(node)
                spares = sum(1 for w in idle if w.user is None)
                while spares < self.spares and len(idle) < self.max_idle:
                    idle.append(self._start(node))
                    spares += 1
                    started += 1
        return started

    def stop_idle(self) -> None:
        """Stop every idle worker (the gateway is stopping; running ones keep running)."""
        with self._lock:
            for idle in self._idle.values():
                for worker in idle:
                    kill_actor(worker.actor)
            self._idle.clear()

    def _fresh(self, node: str) -> list[IdleWorker]:
        """The idle workers of ``node``, those about to exit dropped (they exit by themselves)."""
        oldest = self.clock() - (self.idle_seconds - _EXIT_MARGIN_S)
        idle = [w for w in self._idle.get(node, []) if w.idle_since > oldest]
        self._idle[node] = idle
        return idle

    def _start(self, node: str) -> IdleWorker:
        self._made += 1
        name = f"{SPARE_PREFIX}{self.boot}-{self._made}"
        actor = (
            remote_worker()
            .options(
                name=name,
                namespace=NAMESPACE,
                lifetime="detached",  # once it runs an attempt, it must outlive this gateway
                num_cpus=0,
                num_gpus=0,
                label_selector={NODE_LABEL: node},
                max_restarts=0,
                max_task_retries=0,
            )
            .remote(None, idle_exit_seconds=self.idle_seconds)
        )
        return IdleWorker(name, node, actor, actor.__ray_ready__.remote(), self.clock())
