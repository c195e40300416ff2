"""The executor: Allocated jobs onto Ray workers, followed until their outcome is written back.

Driven by the gateway's job informer (:meth:`Executor.job_changed`, :meth:`job_deleted`);
keeps only what it follows right now, so a restart rebuilds it from the CRDs and Ray:

- Allocated -> launch the attempt's detached actor on the job's node (or find it, if a
  previous gateway launched it; launch it again if that gateway died before the actor
  existed, and no outcome is left), then ``set_job_running`` once its process has started
  (so ``startedAt``, billing and the timeout count from then); an actor that has not
  started within ``start_timeout`` of ``allocatedAt`` (no Ray node for the Gridweave node,
  a full Ray) is lost, ``WorkerNotStarted``.
- Running, first seen (a restart) -> adopt the actor by name; with no actor, the outcome
  in the store finishes the job, and without one the attempt is lost.
- A ``run`` call that ended (``ray.wait``) -> the JSON outcome: Completed with the result's
  URI, or Failed ``Exception`` (the traceback stays in the store); no outcome -> the worker
  died: requeue (Pending, attempts + 1) while retries remain, else Failed ``WorkerLost``.
- ``startedAt + timeoutSeconds`` passed -> kill the actor, TimedOut (from the CRD, so the
  deadline survives a restart).
- Cancelled, requeued or deleted by someone else -> kill the actor.
- Its node lost (:meth:`Executor.node_lost`, from the gateway's node-loss watch) -> kill
  the actor (by name when this gateway never held it), then requeue or fail ``NodeLost``.

Every step is a task on the gateway's event loop; Ray and the object store are called in
threads. One reconciling loop decides the next step of each followed attempt, so a step
that fails (the store or the apiserver unreachable) is simply tried again on the next tick.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import ray

from gridweave_controller.errors import Conflict, InvalidTransition, NotFound
from gridweave_controller.models import Job
from gridweave_controller.operations import AsyncClientBase
from gridweave_controller.phases import JobPhase
from gridweave_runtime.storage import StorageConfig, open_object_store
from job_gateway.execution.actors import (
    FirstFinished,
    actor_death,
    actor_name,
    adopt_attempt,
    finished_attempts,
    kill_actor,
    kill_by_name,
    launch_attempt,
)
from job_gateway.execution.attempt_specs import AttemptRefused, AttemptSpecs
from job_gateway.execution.attempts import Attempt, started_timestamp
from job_gateway.execution.endings import ran_seconds, read_outcome, record_outcome
from job_gateway.execution.image_pulls import PullTokens
from job_gateway.execution.outcome import Outcome
from job_gateway.execution.settings import WarmSettings
from job_gateway.execution.spares import WarmPool, recorded_worker, worker_key, worker_name
from job_gateway.inventory import Inventory
from job_gateway.node_loss import NODE_LOST
from job_gateway.requeue import requeue_or_fail
from job_gateway.sandbox.settings import SandboxConfig, SandboxSettings

__all__ = ["Executor"]

_log = logging.getLogger(__name__)
_ACTIVE = frozenset({JobPhase.ALLOCATED, JobPhase.RUNNING})
#: How often the warm workers are counted and the spares topped up.
_REFILL_INTERVAL_S = 0.5
#: The job moved on meanwhile (cancelled, deleted, finished by another writer).
_MOVED_ON = (InvalidTransition, NotFound, Conflict)


class Executor:
    """Runs the gateway's Allocated jobs on Ray and writes their outcome back to the CRDs."""

    def __init__(
        self,
        crd: AsyncClientBase,
        storage: StorageConfig,
        *,
        inventory: Callable[[], Inventory],
        poll_seconds: float = 0.2,
        start_timeout: float = 300.0,
        warm: WarmSettings | None = None,
        sandbox: SandboxConfig | None = None,
        pull_tokens: PullTokens | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``pull_tokens`` None: a job naming its own image fails (ImagePullFailed)."""
        self.crd = crd
        self.storage = storage
        self.store = open_object_store(storage)
        self._inventory = inventory
        self._poll = poll_seconds
        self._pull_tokens = pull_tokens
        self._specs = AttemptSpecs(
            storage, sandbox or SandboxSettings().config(), inventory, pull_tokens
        )
        self._start_timeout = start_timeout
        self._clock = clock
        self._followed: dict[str, Attempt] = {}
        self._settled: dict[str, int] = {}  # job -> the attempt this executor finished
        self._tasks: set[asyncio.Future[object]] = set()
        self._wake = asyncio.Event()
        self._seen_ready: set[ray.ObjectRef[Any]] = set()
        self._first_finished = FirstFinished()
        self._loop_task: asyncio.Task[None] | None = None
        self._warm = (
            None
            if warm is None or warm.max_idle == 0
            else WarmPool(self.store, warm.spares, warm.max_idle, warm.idle_seconds)
        )
        self._idle_exit = None if warm is None else warm.idle_seconds
        self._refilling = False
        self._next_refill = 0.0
        self._finished_listeners: list[Callable[[Job], None]] = []

    def on_finished(self, listener: Callable[[Job], None]) -> None:
        """Call ``listener`` with each job whose outcome this executor wrote, as the write
        answered it (before the informer brings it back: a waiting caller answers at once)."""
        self._finished_listeners.append(listener)

    # -- what the informer delivers -------------------------------------------------------

    def job_changed(self, job: Job) -> None:
        """An added or updated job: follow it while Allocated or Running, else let go."""
        current = self._followed.get(job.name)
        if job.phase in _ACTIVE:
            if current is not None and current.attempt == job.status.attempts:
                return
            if self._settled.get(job.name) == job.status.attempts:
                return  # an event older than the outcome this executor wrote
            if current is not None:
                self._drop(current)
            attempt = Attempt(job, launch=job.phase is JobPhase.ALLOCATED)
            if job.phase is JobPhase.RUNNING:
                attempt.adopted = True
                attempt.started_at = started_timestamp(job)
            self._followed[job.name] = attempt
            self._wake.set()
            return
        self._settled.pop(job.name, None)
        if current is not None:
            self._drop(current)
        elif self._loop_task is None and job.phase is JobPhase.CANCELLED and job.status.node:
            # the first list (before start): cancelled while no gateway followed it, its
            # actor may still run
            self._spawn(self._kill_named(job.name, job.status.attempts))

    def job_deleted(self, job: Job) -> None:
        """A deleted job: its worker is killed."""
        self._settled.pop(job.name, None)
        current = self._followed.get(job.name)
        if current is not None:
            self._drop(current)

    def node_lost(self, job: Job, message: str) -> bool:
        """Requeue the followed attempt of ``job`` (its node is lost); False: not followed."""
        attempt = self._followed.get(job.name)
        if attempt is None or attempt.attempt != job.status.attempts:
            return False
        attempt.node_lost = message
        self._wake.set()
        return True

    def following(self) -> dict[str, int]:
        """The jobs followed now and their attempt."""
        return {name: a.attempt for name, a in self._followed.items()}

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Start the reconciling loop."""
        if self._loop_task is None:
            self._first_finished = FirstFinished()
            self._loop_task = asyncio.create_task(self._run(), name="executor")

    async def stop(self) -> None:
        """Stop following; the workers keep running (a next gateway adopts them), the idle
        workers are stopped."""
        tasks = [t for t in (self._loop_task, *self._tasks) if t is not None]
        self._loop_task = None
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._first_finished.close()
        if self._warm is not None:
            await asyncio.to_thread(self._warm.stop_idle)
        if self._pull_tokens is not None:
            await self._pull_tokens.close()

    # -- the loop ---------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            # woken by a job's news, by a followed call that ends (settled at once, not at
            # the next poll), or after the poll interval; a call already seen ended is not
            # waited on again, so one whose step is pending cannot spin the loop
            waiting = [ref for ref in self._watched() if ref not in self._seen_ready]
            await self._first_finished.wait(self._wake, waiting, self._poll)
            self._wake.clear()
            try:
                await self._tick()
            except Exception:  # a tick must never end the loop
                _log.exception("executor tick failed")

    def _watched(self) -> list[ray.ObjectRef[Any]]:
        """The calls whose end moves an attempt on: each run, and the actor's readiness of
        an attempt not yet marked Running."""
        return [
            ref
            for a in self._followed.values()
            if a.run is not None and not a.busy
            for ref in ((a.run.run, a.run.ready) if a.needs_running else (a.run.run,))
        ]

    async def _tick(self) -> None:
        runs = self._watched()
        ready = set(await asyncio.to_thread(finished_attempts, runs)) if runs else set()
        self._seen_ready = ready
        now = self._clock()
        for attempt in list(self._followed.values()):
            if attempt.busy:
                continue
            step = self._next_step(attempt, ready, now)
            if step is not None:
                attempt.busy = True
                self._spawn(self._guarded(attempt, step))
        if self._warm is not None and not self._refilling and now >= self._next_refill:
            self._refilling = True
            self._next_refill = now + _REFILL_INTERVAL_S
            self._spawn(self._refill(self._warm))

    async def _refill(self, warm: WarmPool) -> None:
        """Keep the spares of every ready node with a schedulable GPU."""
        try:
            nodes = [
                node.name
                for node in self._inventory().nodes
                if node.ready and any(gpu.schedulable for gpu in node.gpus)
            ]
            await asyncio.to_thread(warm.refill, nodes)
        finally:
            self._refilling = False

    def _next_step(
        self, attempt: Attempt, ready: set[ray.ObjectRef[Any]], now: float
    ) -> Awaitable[None] | None:
        if attempt.node_lost is not None:
            return self._lost(attempt, NODE_LOST, attempt.node_lost)
        if attempt.run is None:
            return self._launch(attempt) if attempt.launch else self._adopt(attempt)
        if attempt.needs_running:
            if attempt.run.ready in ready or attempt.run.existed:
                return self._mark_running(attempt)
            allocated = attempt.job.status.allocated_at
            if allocated is not None and now >= allocated.timestamp() + self._start_timeout:
                return self._lost(
                    attempt, "WorkerNotStarted", f"no worker started on {attempt.job.status.node}"
                )
            return None
        if attempt.run.run in ready:
            attempt.ready_at = attempt.ready_at or now
            return self._settle(attempt)
        if attempt.started_at is not None and now >= attempt.started_at + attempt.timeout_s:
            return self._time_out(attempt, now)
        return None

    async def _guarded(self, attempt: Attempt, step: Awaitable[None]) -> None:
        try:
            await step
        except _MOVED_ON as error:
            _log.info("job %s moved on: %s", attempt.name, error)
            self._drop(attempt)
        except Exception:
            _log.exception("job %s: step failed; retried on the next tick", attempt.name)
        finally:
            attempt.busy = False

    # -- the steps --------------------------------------------------------------------------

    async def _launch(self, attempt: Attempt) -> None:
        job = attempt.job
        node = job.status.node
        assert node is not None  # Allocated and Running jobs have one
        handed = await asyncio.to_thread(recorded_worker, self.store, attempt.name, attempt.attempt)
        if handed is not None:
            # an earlier gateway handed this attempt to a worker and died before it marked
            # the job Running: follow that worker, or its outcome; never run it again
            attempt.launch = False
            attempt.needs_running = True
            await self._adopt(attempt)
            return
        await self._start_worker(attempt, node)

    async def _start_worker(self, attempt: Attempt, node: str) -> None:
        job = attempt.job
        try:
            spec = await self._specs.for_attempt(job, attempt.attempt)
        except AttemptRefused as refused:
            await self.crd.set_job_failed(attempt.name, refused.reason, str(refused))
            self._finished(attempt)
            return
        warm = self._warm
        idle = None
        if warm is not None:
            idle = await asyncio.to_thread(warm.take, node, job.spec.user_id, spec.job.environment)
        if warm is not None and idle is not None:
            self._next_refill = 0.0  # a spare taken: its replacement starts at the next tick
            run = await asyncio.to_thread(warm.hand_over, idle, spec)
        else:
            # recorded before the actor exists: a gateway that restarts finds it handed over
            await asyncio.to_thread(
                self.store.put,
                worker_key(attempt.name, attempt.attempt),
                actor_name(attempt.name, attempt.attempt).encode(),
            )
            run = await asyncio.to_thread(launch_attempt, spec, node, self._idle_exit)
        attempt.run = run
        # an actor a previous gateway launched may have run already: bill by its record
        attempt.adopted = run.existed
        if attempt.dropped:  # cancelled while the actor was being created
            await asyncio.to_thread(kill_actor, run.actor)
            return
        attempt.needs_running = True  # once the actor's process has started
        if idle is not None:  # a warm worker's process runs already: Running now
            await self._mark_running(attempt)
            return
        self._wake.set()

    async def _mark_running(self, attempt: Attempt) -> None:
        job = await self.crd.set_job_running(attempt.name, known=attempt.job)
        attempt.job = job
        attempt.needs_running = False
        attempt.started_at = started_timestamp(job)
        self._wake.set()

    async def _adopt(self, attempt: Attempt) -> None:
        name = await asyncio.to_thread(worker_name, self.store, attempt.name, attempt.attempt)
        run = await asyncio.to_thread(adopt_attempt, name)
        if run is not None:
            attempt.run = run
            attempt.adopted = True
            self._wake.set()
            return
        outcome = await self._read_outcome(attempt)
        if outcome is not None:
            if attempt.job.phase is JobPhase.ALLOCATED:  # it ran while no gateway watched
                await self._mark_running(attempt)
                attempt.adopted = True
                attempt.started_at = outcome.started_at  # the trusted worker's clock
            await self._write_outcome(attempt, outcome, self._clock())
            return
        if attempt.job.phase is JobPhase.ALLOCATED and attempt.job.status.node is not None:
            # handed over by a gateway that died before it marked the job Running, and no
            # worker or outcome is left: the same attempt starts (again, as a retry would)
            await self._start_worker(attempt, attempt.job.status.node)
            return
        await self._lost(attempt, "Lost", f"no worker and no outcome for attempt {attempt.attempt}")

    async def _settle(self, attempt: Attempt) -> None:
        assert attempt.run is not None and attempt.ready_at is not None
        outcome = await self._read_outcome(attempt)
        if outcome is None:
            death = await asyncio.to_thread(actor_death, attempt.run.actor)
            await self._lost(
                attempt, "WorkerLost", f"the worker of attempt {attempt.attempt} died ({death})"
            )
            return
        await self._release(attempt, outcome)
        await self._write_outcome(attempt, outcome, attempt.ready_at)

    async def _release(self, attempt: Attempt, outcome: Outcome) -> None:
        """Keep the ended attempt's worker warm for its user's next attempt when it was left
        clean (the outcome says so), else kill it."""
        assert attempt.run is not None
        if attempt.kept_warm:  # a settle retried after its outcome write failed
            return
        job = attempt.job
        kept = False
        if self._warm is not None and outcome.reusable and job.status.node is not None:
            environment = self._specs.environment(job)
            kept = await asyncio.to_thread(
                self._warm.release, attempt.run, job.status.node, job.spec.user_id, environment
            )
        attempt.kept_warm = kept
        if not kept:
            await asyncio.to_thread(kill_actor, attempt.run.actor)

    async def _write_outcome(self, attempt: Attempt, outcome: Outcome, observed: float) -> None:
        job = await record_outcome(self.crd, self.store, attempt, outcome, observed)
        self._finished(attempt)
        for listener in self._finished_listeners:
            listener(job)

    async def _lost(self, attempt: Attempt, reason: str, message: str) -> None:
        where = f"attempt {attempt.attempt} on {attempt.job.status.node}"
        _log.warning("job %s: %s lost (%s): %s", attempt.name, where, reason, message)
        if attempt.run is not None:
            await asyncio.to_thread(kill_actor, attempt.run.actor)
        elif attempt.node_lost is not None:  # a previous gateway's actor may still run
            await self._kill_named(attempt.name, attempt.attempt)
        ran = ran_seconds(attempt, self._clock())
        await requeue_or_fail(self.crd, attempt.job, reason, message, wall_seconds=ran)
        self._finished(attempt)

    async def _time_out(self, attempt: Attempt, now: float) -> None:
        assert attempt.run is not None and attempt.started_at is not None
        await asyncio.to_thread(kill_actor, attempt.run.actor)
        await self.crd.set_job_timed_out(
            attempt.name,
            message=f"ran past its timeout of {attempt.timeout_s} s; its worker was killed",
            wall_seconds=max(0.0, now - attempt.started_at),
        )
        self._finished(attempt)

    async def _read_outcome(self, attempt: Attempt) -> Outcome | None:
        return await asyncio.to_thread(read_outcome, self.store, attempt.name, attempt.attempt)

    def _finished(self, attempt: Attempt) -> None:
        self._settled[attempt.name] = attempt.attempt
        if self._followed.get(attempt.name) is attempt:
            del self._followed[attempt.name]

    def _drop(self, attempt: Attempt) -> None:
        attempt.dropped = True
        if self._followed.get(attempt.name) is attempt:
            del self._followed[attempt.name]
        if attempt.run is not None and not attempt.kept_warm:
            self._spawn(asyncio.to_thread(kill_actor, attempt.run.actor))

    async def _kill_named(self, job_id: str, attempt: int) -> None:
        """Kill the worker of an attempt this executor does not follow, if it runs."""
        name = await asyncio.to_thread(worker_name, self.store, job_id, attempt)
        if await asyncio.to_thread(kill_by_name, name):
            _log.info("killed %s, the worker of attempt %d of %s", name, attempt, job_id)

    def _spawn(self, work: Awaitable[object]) -> None:
        # the task runs ``work`` itself: one cancelled before it started still closes it
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Future[object]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            _log.error("executor task failed", exc_info=error)
