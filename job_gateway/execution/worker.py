"""The worker side: the trusted process that runs a job attempt in its container.

:class:`JobWorker` is the body of a detached Ray actor, one per job attempt, named
``gw-job-<id>-<attempt>`` in the ``gridweave`` namespace (:mod:`job_gateway.execution.actors`).
It reads the function's and arguments' bytes from the object store, runs them in a
container of the job's owner (:mod:`job_gateway.sandbox`: the only place they are
unpickled), captures the container's stdout and stderr as they come, and writes the result
(as the bytes the container sent, with their SHA-256) or the remote traceback, both outputs
and, last, the JSON outcome record. The gateway reads only that record; nothing here
unpickles anything (see docs/architecture.md, "The job sandbox").
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import socket
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gridweave_clients.gateway.reasons import (
    IMAGE_PULL_FAILED,
    OUT_OF_MEMORY,
    PIP_INSTALL_FAILED,
    out_of_memory_message,
)
from gridweave_runtime.storage import (
    StorageConfig,
    attempt_objects,
    open_object_store,
)
from job_gateway.execution.live_output import LiveOutput, capture_file
from job_gateway.execution.outcome import (
    INPUTS_MISSING,
    MAX_MESSAGE_CHARS,
    NETWORK_UNAVAILABLE,
    WORKER_ERROR,
    Outcome,
    outcome_key,
)
from job_gateway.sandbox.attempt import (
    SandboxedJob,
    limits_for,
    run_sandboxed,
    warm_containers,
)
from job_gateway.sandbox.config import SandboxConfig
from job_gateway.sandbox.container import Chunk, ContainerRun
from job_gateway.sandbox.container_names import sweep_orphans
from job_gateway.sandbox.images import (
    ImagePull,
    ImagePullFailed,
    UnpackedImage,
    evict_images,
    unpacked_image,
)
from job_gateway.sandbox.network import NetworkUnavailable
from job_gateway.sandbox.pip_envs import PipEnvironment, PipInstallFailed, pip_environment

if TYPE_CHECKING:
    from gridweave_controller.models import MapShare

__all__ = ["AttemptSpec", "JobWorker", "run_attempt"]


@dataclass(frozen=True, slots=True)
class AttemptSpec:
    """Everything one attempt needs, as plain data (it travels to the Ray worker)."""

    job_id: str
    attempt: int
    function_ref: str
    args_ref: str | None
    storage: StorageConfig
    sandbox: SandboxConfig
    job: SandboxedJob
    #: The job's own image and the owner's token to pull it; None: the node's default image.
    image: ImagePull | None = None
    #: The job's pip= requirements, installed into an environment of the node first.
    pip: tuple[str, ...] = ()
    #: The job is one worker of a map: its share of the inputs (None: a single call).
    map: MapShare | None = None


class JobWorker:
    """The actor's body: ``run`` runs an attempt once; a repeated call returns at once.

    The attempt comes with the actor (``gw-job-<id>-<attempt>``) or with ``run`` (a warm
    worker, :mod:`job_gateway.execution.spares`, which may run several attempts of one
    user, one after the other). A gateway that adopts a running actor calls ``run`` again
    without an attempt and waits (``ray.wait``) on that call: Ray runs an actor's calls one
    at a time, so it returns right after the attempt under way, which never runs twice.

    With ``idle_exit_seconds``, a watchdog thread ends the process once no attempt has run
    for that long, so idle workers never outlive the gateway that kept them by much; its
    warm containers are deleted first. A new worker deletes the containers of workers of
    its node that died without doing so
    (:func:`~job_gateway.sandbox.container_names.sweep_orphans`).
    """

    def __init__(
        self, spec: AttemptSpec | None = None, *, idle_exit_seconds: float | None = None
    ) -> None:
        self.spec = spec
        self._done: set[tuple[str, int]] = set()
        self._lock = threading.Lock()
        self._busy = False
        self._idle_since = time.monotonic()
        if spec is not None or idle_exit_seconds is not None:
            sandbox = spec.sandbox if spec is not None else None
            threading.Thread(target=_sweep, args=(sandbox,), daemon=True).start()
        if idle_exit_seconds is not None:
            watchdog = threading.Thread(
                target=self._exit_when_idle, args=(idle_exit_seconds,), daemon=True
            )
            watchdog.start()

    def run(self, spec: AttemptSpec | None = None) -> None:
        """Run the attempt given (or the actor's own) unless it ran here already."""
        attempt = spec or self.spec
        if attempt is None or (attempt.job_id, attempt.attempt) in self._done:
            return
        self._done.add((attempt.job_id, attempt.attempt))
        with self._lock:
            self._busy = True
        try:
            run_attempt(attempt)
        finally:
            with self._lock:
                self._busy = False
                self._idle_since = time.monotonic()

    def _exit_when_idle(self, idle_exit_seconds: float) -> None:
        while True:
            time.sleep(min(1.0, idle_exit_seconds / 4))
            with self._lock:
                if not self._busy and time.monotonic() - self._idle_since >= idle_exit_seconds:
                    warm_containers.close()
                    os._exit(0)


def _sweep(sandbox: SandboxConfig | None) -> None:
    """Delete the containers that dead workers of this node left (their state, cgroups)."""
    if sandbox is None:  # a spare: the node's own settings (read here only)
        from job_gateway.sandbox.settings import SandboxSettings

        sandbox = SandboxSettings().config()
    config = sandbox
    try:
        swept = sweep_orphans(config.runtime, config.state_dir)
    except (OSError, subprocess.SubprocessError):
        return
    if swept:
        print(f"deleted {len(swept)} containers of workers that died", file=sys.stderr)


def run_attempt(spec: AttemptSpec) -> Outcome:
    """Run one attempt in its container and record it; the outcome record is written last.

    The function's and arguments' bytes go to the container as they are (unpickled only
    inside it); the result comes back as bytes, stored with its SHA-256 in the outcome, which
    the gateway copies into the job's status for the SDK to check. When the worker itself
    fails (the runtime refused to start the container, a write to the store failed), the
    attempt ends ``WorkerError`` with what failed, and the worker's log has the traceback.
    """
    store = open_object_store(spec.storage)
    started = time.time()
    clock = time.perf_counter()
    try:
        return _run_and_record(spec, store, started, clock)
    except Exception as error:
        traceback.print_exc()  # the worker's own log (Ray's worker-*.err of its node)
        return _record_worker_error(spec, store, started, time.perf_counter() - clock, error)


def _run_and_record(spec: AttemptSpec, store: Any, started: float, clock: float) -> Outcome:
    objects = attempt_objects(spec.job_id, spec.attempt)
    with capture_file() as stdout, capture_file() as stderr:
        mirror = LiveOutput(store, [(objects.stdout, stdout), (objects.stderr, stderr)])
        try:
            ending = _run_in_sandbox(spec, store, stdout.fileno, stderr.fileno)
        finally:
            mirror.stop()
    wall = time.perf_counter() - clock
    store.put(objects.stdout, stdout.data)
    store.put(objects.stderr, stderr.data)
    digest = None
    if ending.ok:
        store.put(objects.result, ending.payload)
        digest = hashlib.sha256(ending.payload).hexdigest()
    else:
        store.put(objects.error, ending.traceback.encode())
    outcome = _outcome(
        spec,
        started,
        wall,
        status="ok" if ending.ok else "exception",
        reason=None if ending.ok else ending.reason,
        prepare_seconds=min(wall, ending.prepare_seconds),
        exception_type=ending.exception_type,
        message=ending.message,
        result_sha256=digest,
        reusable=True,  # the user's code ran in a container that is gone now
    )
    store.put(outcome_key(spec.job_id, spec.attempt), outcome.model_dump_json().encode())
    mirror.delete_parts()  # the whole outputs are there: readers no longer need them
    return outcome


def _record_worker_error(
    spec: AttemptSpec, store: Any, started: float, wall: float, error: Exception
) -> Outcome:
    """The outcome of an attempt the worker itself failed (its message says what failed);
    the worker is not kept warm: what it holds may be broken."""
    message = f"the job's worker failed: {type(error).__name__}: {error}"[:MAX_MESSAGE_CHARS]
    outcome = _outcome(
        spec,
        started,
        wall,
        status="exception",
        reason=WORKER_ERROR,
        exception_type=WORKER_ERROR,
        message=message,
        reusable=False,
    )
    store.put(attempt_objects(spec.job_id, spec.attempt).error, f"{message}\n".encode())
    store.put(outcome_key(spec.job_id, spec.attempt), outcome.model_dump_json().encode())
    return outcome


def _outcome(spec: AttemptSpec, started: float, wall: float, **fields: Any) -> Outcome:
    return Outcome(
        job_id=spec.job_id,
        attempt=spec.attempt,
        wall_seconds=wall,
        started_at=started,
        finished_at=started + wall,
        hostname=socket.gethostname(),
        ray_node_id=_ray_node_id(),
        pid=os.getpid(),
        **fields,
    )


@dataclass(frozen=True, slots=True)
class _Ending:
    """How the function ended, as the worker records it (never unpickled here)."""

    ok: bool
    payload: bytes = b""
    reason: str = "Exception"
    exception_type: str | None = None
    message: str | None = None
    traceback: str = ""
    prepare_seconds: float = 0.0


def _run_in_sandbox(spec: AttemptSpec, store: Any, stdout: int, stderr: int) -> _Ending:
    try:
        function = store.get(spec.function_ref)
        arguments = store.get(spec.args_ref) if spec.args_ref else b""
    except Exception as error:  # the inputs are gone: the job fails, saying which
        return _failed(INPUTS_MISSING, f"the job's inputs could not be read: {error}")
    clock = time.monotonic()
    try:
        image = _image(spec, stderr)
        environment = _pip_environment(spec, image, stderr)
    except ImagePullFailed as error:
        ending = _failed(IMAGE_PULL_FAILED, str(error))
        return dataclasses.replace(ending, prepare_seconds=time.monotonic() - clock)
    except PipInstallFailed as error:  # its output is on the job's stderr already
        ending = _failed(PIP_INSTALL_FAILED, str(error))
        return dataclasses.replace(ending, prepare_seconds=time.monotonic() - clock)
    except NetworkUnavailable as error:  # the build's container never started
        ending = _failed(NETWORK_UNAVAILABLE, f"the pip build's network could not be made: {error}")
        return dataclasses.replace(ending, prepare_seconds=time.monotonic() - clock)
    prepared = time.monotonic() - clock
    try:
        if spec.map is not None:
            ending = _run_share(spec, spec.map, store, function, stdout, stderr, image, environment)
        else:
            ending = _run_function(spec, function, arguments, stdout, stderr, image, environment)
    except NetworkUnavailable as error:  # the container never started: nothing ran
        ending = _failed(NETWORK_UNAVAILABLE, f"the job's network could not be made: {error}")
    return dataclasses.replace(ending, prepare_seconds=prepared)


def _pip_environment(
    spec: AttemptSpec, image: UnpackedImage | None, stderr: int
) -> PipEnvironment | None:
    """The job's pip environment, from the node's cache or built now (its build's output on
    the job's stderr: the job's log); None when it asks for none."""
    if not spec.pip:
        return None
    return pip_environment(
        spec.sandbox,
        spec.job.user_id,
        spec.pip,
        output=stderr,
        image=image,
        image_name=spec.image.image if spec.image is not None else None,
    )


def _image(spec: AttemptSpec, stderr: int) -> UnpackedImage | None:
    """The job's own image, from the node's cache or pulled now (said on the job's stderr)."""
    if spec.image is None:
        return None
    image = unpacked_image(spec.sandbox.image_dir, spec.image)
    if image.pull_seconds > 0:
        size = image.size_bytes / 1e6
        note = f"gridweave: pulled {spec.image.image} ({size:.0f} MB) in {image.pull_seconds:.1f} s"
        os.write(stderr, f"{note}\n".encode())
        evict_images(spec.sandbox.image_dir, max_bytes=int(spec.sandbox.image_cache_gb * 1e9))
    return image


def _run_function(
    spec: AttemptSpec,
    function: bytes,
    arguments: bytes,
    stdout: int,
    stderr: int,
    image: UnpackedImage | None,
    environment: PipEnvironment | None = None,
) -> _Ending:
    run = run_sandboxed(
        spec.sandbox,
        spec.job,
        function=function,
        arguments=arguments,
        stdout=stdout,
        stderr=stderr,
        extra_environment=(
            ("GRIDWEAVE_JOB_ID", spec.job_id),
            ("GRIDWEAVE_ATTEMPT", str(spec.attempt)),
        ),
        image=image,
        python_env=environment.site if environment is not None else None,
    )
    header = run.header
    if header is not None and header.get("status") == "ok":
        return _Ending(ok=True, payload=run.payload)
    if header is not None:
        return _Ending(
            ok=False,
            exception_type=_text(header.get("exception_type"), 500),
            message=_text(header.get("message"), MAX_MESSAGE_CHARS),
            traceback=_text(header.get("traceback"), 1 << 20) or "",
        )
    if run.oom_killed:
        limit = limits_for(spec.sandbox, spec.job).memory_mb
        return _failed(OUT_OF_MEMORY, out_of_memory_message(limit))
    return _failed("ProcessDied", run.error or "the function's process ended without a result")


def _run_share(
    spec: AttemptSpec,
    share: MapShare,
    store: Any,
    function: bytes,
    stdout: int,
    stderr: int,
    image: UnpackedImage | None,
    environment: PipEnvironment | None,
) -> _Ending:
    """The worker's share of a map (:mod:`job_gateway.execution.map_share`): its result is
    the share's progress, JSON (the inputs' own results are in the chunk records)."""

    def run_chunk(inputs: bytes, count: int) -> ContainerRun:
        return run_sandboxed(
            spec.sandbox,
            spec.job,
            function=function,
            arguments=inputs,
            stdout=stdout,
            stderr=stderr,
            extra_environment=(
                ("GRIDWEAVE_JOB_ID", spec.job_id),
                ("GRIDWEAVE_ATTEMPT", str(spec.attempt)),
                ("GRIDWEAVE_MAP_ID", share.map_id),
            ),
            image=image,
            python_env=environment.site if environment is not None else None,
            chunk=Chunk(items=count, retries=share.retries),
        )

    def why_cut_short(run: ContainerRun) -> str:
        if run.oom_killed:
            limit = limits_for(spec.sandbox, spec.job).memory_mb
            return f"{OUT_OF_MEMORY}: {out_of_memory_message(limit)}"
        return f"ProcessDied: {run.error or 'the process ended before this input ran'}"

    from job_gateway.execution.map_share import run_share  # a map's worker only

    progress = run_share(share, store, run_chunk, why_cut_short)
    return _Ending(ok=True, payload=progress.model_dump_json().encode())


def _failed(reason: str, message: str) -> _Ending:
    return _Ending(
        ok=False, reason=reason, exception_type=reason, message=message, traceback=message + "\n"
    )


def _text(value: object, limit: int) -> str | None:
    """A string the runner sent, bounded; anything else is dropped."""
    return value[:limit] if isinstance(value, str) else None


def _ray_node_id() -> str:
    try:
        import ray

        return str(ray.get_runtime_context().get_node_id())
    except Exception:  # outside Ray (a direct call): no node id
        return ""
