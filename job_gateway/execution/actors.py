"""The gateway's side of the worker actors: launch, adopt, follow, kill, ask how one died.

Every call here blocks (Ray's driver API): the executor runs them off the event loop.
Nothing here deserializes what a worker produced: completion is learnt with ``ray.wait``
(which only says an object exists), a death from the GCS actor table (protobuf, not
pickle); the outcome itself is the JSON record in the object store.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import ray
from ray.actor import ActorHandle

from job_gateway.execution.worker import AttemptSpec, JobWorker

__all__ = [
    "NAMESPACE",
    "FirstFinished",
    "NODE_LABEL",
    "RunningAttempt",
    "actor_alive",
    "actor_death",
    "actor_name",
    "adopt_attempt",
    "finished_attempts",
    "kill_actor",
    "kill_by_name",
    "launch_attempt",
    "remote_worker",
]

#: The Ray namespace of every worker actor (names are unique within it).
NAMESPACE = "gridweave"
#: The Ray node label naming the Gridweave node a Ray node serves (``gridweave.io/node=<name>``):
#: the local head declares it, and kuberay-service's worker groups declare the same label
#: (``kuberay_service.ray.worker_groups.NODE_LABEL``) for every joined node.
NODE_LABEL = "gridweave.io/node"

_worker_class: Any = None


def actor_name(job_id: str, attempt: int) -> str:
    """The detached actor of one attempt: a restarted gateway finds it by this name."""
    return f"gw-job-{job_id}-{attempt}"


@dataclass(frozen=True, slots=True)
class RunningAttempt:
    """A worker actor, the ``run`` call the executor waits for, and the actor's readiness.

    ``ready`` ends once the actor's process has started on its node (or could not);
    ``existed``: the actor was there before this launch (a previous gateway created it), so
    ``ready`` may wait behind a ``run`` already under way and tells nothing.
    """

    name: str
    actor: ActorHandle[JobWorker]
    run: ray.ObjectRef  # type: ignore[type-arg]
    ready: ray.ObjectRef  # type: ignore[type-arg]
    existed: bool = False


def remote_worker() -> Any:
    """The Ray actor class of :class:`JobWorker` (made once)."""
    global _worker_class
    if _worker_class is None:
        _worker_class = ray.remote(JobWorker)
    return _worker_class


def launch_attempt(
    spec: AttemptSpec, node: str, idle_exit_seconds: float | None = None
) -> RunningAttempt:
    """Create (or find, if it exists) the attempt's actor on ``node`` and call ``run``.

    ``num_gpus=0``: Ray cannot schedule by VRAM, the gateway already chose the GPUs; the
    label selector pins the actor to the Ray node(s) labelled with the Gridweave node (a
    hard constraint: with no such Ray node the actor waits, it never lands elsewhere). A
    name that is taken returns the existing actor (``get_if_exists``), and ``run`` runs only
    once per actor, so a repeated launch never runs the attempt twice. With
    ``idle_exit_seconds`` the worker may be kept warm once the attempt ended, and exits
    after that long without one.
    """
    name = actor_name(spec.job_id, spec.attempt)
    existed = _exists(name)
    actor = (
        remote_worker()
        .options(
            name=name,
            namespace=NAMESPACE,
            lifetime="detached",
            get_if_exists=True,
            num_cpus=0,
            num_gpus=0,
            label_selector={NODE_LABEL: node},
            max_restarts=0,
            max_task_retries=0,
        )
        .remote(spec, idle_exit_seconds=idle_exit_seconds)
    )
    # readiness first: an actor's calls run in order
    ready: ray.ObjectRef[None] = actor.__ray_ready__.remote()
    return RunningAttempt(name, actor, actor.run.remote(), ready, existed)


def _exists(name: str) -> bool:
    try:
        ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:
        return False
    return True


def adopt_attempt(name: str) -> RunningAttempt | None:
    """Follow a live actor again (after a gateway restart); None when there is none.

    ``run`` is called again without an attempt: it returns once the first call has
    (a spare whose first call never came returns at once, and the attempt is found lost).
    """
    try:
        actor = ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:
        return None
    ready: ray.ObjectRef[None] = actor.__ray_ready__.remote()
    return RunningAttempt(name, actor, actor.run.remote(), ready, existed=True)


def finished_attempts(runs: Sequence[ray.ObjectRef]) -> list[ray.ObjectRef]:  # type: ignore[type-arg]
    """The calls that have ended (returned, raised, or their actor died).

    ``ray.wait`` with ``fetch_local=False`` neither fetches nor deserializes the values.
    """
    if not runs:
        return []
    ready, _ = ray.wait(list(runs), num_returns=len(runs), timeout=0, fetch_local=False)
    return list(ready)


class FirstFinished:
    """Waits for a wake-up or the end of the first of some Ray calls, whichever comes first.

    The calls are waited on with ``ray.wait`` (``fetch_local=False``: nothing is fetched or
    deserialized) in one thread of its own, one wait at a time: a wait still under way when
    the next one is asked for (a wake-up came first) is waited on again, never queued behind,
    and the event loop's default threads are never taken by it.
    """

    def __init__(self) -> None:
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gw-ray-wait")
        self._pending: asyncio.Future[Any] | None = None

    async def wait(
        self,
        wake: asyncio.Event,
        runs: Sequence[ray.ObjectRef],  # type: ignore[type-arg]
        timeout: float,
    ) -> None:
        """Return once ``wake`` is set, one of ``runs`` has ended, or ``timeout`` passed."""
        woken = asyncio.ensure_future(wake.wait())
        waits: set[asyncio.Future[Any]] = {woken}
        if runs and (self._pending is None or self._pending.done()):
            self._pending = asyncio.get_running_loop().run_in_executor(
                self._thread,
                functools.partial(
                    ray.wait, list(runs), num_returns=1, timeout=timeout, fetch_local=False
                ),
            )
            self._pending.add_done_callback(_consumed)  # an error shows at the next tick
        if self._pending is not None and not self._pending.done():
            waits.add(self._pending)
        try:
            await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            woken.cancel()

    def close(self) -> None:
        """Let the thread end once its wait (at most ``timeout``) is over."""
        self._thread.shutdown(wait=False, cancel_futures=True)


def _consumed(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def kill_actor(actor: ActorHandle[Any]) -> None:
    """Kill the actor's process (no restart); a dead actor is left as it is."""
    try:
        ray.kill(actor, no_restart=True)
    except ValueError:  # not an actor any more
        pass


def kill_by_name(name: str) -> bool:
    """Kill the named actor if it exists; True when there was one."""
    try:
        actor = ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:
        return False
    kill_actor(actor)
    return True


def actor_alive(actor: ActorHandle[Any]) -> bool:
    """The actor is ALIVE in the GCS actor table (no pickle). An actor whose node died
    resolves its readiness call with an error, which ``ray.wait`` cannot tell from ready."""
    from ray._private import state  # the GCS tables; ray.util.state needs the dashboard

    info = state.actors(actor_id=actor._actor_id.hex())
    return bool(info) and info.get("State") == "ALIVE"


def actor_death(actor: ActorHandle[Any]) -> str:
    """How the actor ended, from the GCS actor table (state and death cause, no pickle)."""
    from ray._private import state  # the GCS tables; ray.util.state needs the dashboard

    info = state.actors(actor_id=actor._actor_id.hex())
    if not info:
        return "its Ray actor is gone"
    died = f"its Ray actor is {info.get('State', 'unknown')}"
    cause = info.get("DeathCause")
    context = getattr(cause, "actor_died_error_context", None)
    message = str(getattr(context, "error_message", "") or "").strip()
    if message:
        died += f": {message.splitlines()[0][:300]}"
    return died
