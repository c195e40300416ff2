"""The worker side: the one control-plane-adjacent module that unpickles user data.

:class:`JobWorker` is the body of a detached Ray actor, one per job attempt, named
``gw-job-<id>-<attempt>`` in the ``gridweave`` namespace (:mod:`job_gateway.execution.actors`).
In the worker process it sets the GPU visibility variables to exactly the job's indices,
then loads the function and its ``(args, kwargs)`` with cloudpickle from the object store,
runs it with stdout and stderr captured at the file-descriptor level, and writes the
result (cloudpickle) or the remote traceback, both outputs and, last, the JSON outcome
record. The gateway reads only that record; it never unpickles anything (see
docs/architecture.md, "Execution on Ray").
"""

from __future__ import annotations

import importlib
import os
import socket
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import cloudpickle

from gridweave_runtime.storage import (
    StorageConfig,
    attempt_objects,
    log_part_key,
    open_object_store,
)
from job_gateway.execution.outcome import MAX_MESSAGE_CHARS, Outcome, outcome_key

__all__ = ["AttemptSpec", "JobWorker", "run_attempt"]

#: Variables a worker clears before setting its own, so no inherited value widens the view.
_GPU_VARIABLES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


@dataclass(frozen=True, slots=True)
class AttemptSpec:
    """Everything one attempt needs, as plain data (it travels to the Ray worker)."""

    job_id: str
    attempt: int
    function_ref: str
    args_ref: str | None
    storage: StorageConfig
    environment: dict[str, str] = field(default_factory=dict)


class JobWorker:
    """The actor's body: ``run`` runs an attempt once; a repeated call returns at once.

    The attempt comes with the actor (``gw-job-<id>-<attempt>``) or with ``run`` (a warm
    worker, :mod:`job_gateway.execution.spares`, which may run several attempts of one
    user, one after the other). A gateway that adopts a running actor calls ``run`` again
    without an attempt and waits (``ray.wait``) on that call: Ray runs an actor's calls one
    at a time, so it returns right after the attempt under way, which never runs twice.

    With ``idle_exit_seconds``, a watchdog thread ends the process once no attempt has run
    for that long, so idle workers never outlive the gateway that kept them by much.
    """

    def __init__(
        self, spec: AttemptSpec | None = None, *, idle_exit_seconds: float | None = None
    ) -> None:
        self.spec = spec
        self._done: set[tuple[str, int]] = set()
        self._lock = threading.Lock()
        self._busy = False
        self._idle_since = time.monotonic()
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
                    os._exit(0)


def run_attempt(spec: AttemptSpec) -> Outcome:
    """Load, run and record one attempt; the outcome record is written last."""
    for name in _GPU_VARIABLES:
        os.environ.pop(name, None)
    os.environ.update(spec.environment)  # before any user code is loaded
    store = open_object_store(spec.storage)
    objects = attempt_objects(spec.job_id, spec.attempt)
    threads_before = _thread_ids()
    started = time.time()
    clock = time.perf_counter()
    error: BaseException | None = None
    payload, remote_traceback = b"", ""
    with _captured(1, sys.stdout) as stdout, _captured(2, sys.stderr) as stderr:
        mirror = _LiveOutput(store, [(objects.stdout, stdout), (objects.stderr, stderr)])
        try:
            function = cloudpickle.loads(store.get(spec.function_ref))
            args, kwargs = _arguments(store.get(spec.args_ref) if spec.args_ref else None)
            payload = cloudpickle.dumps(function(*args, **kwargs))
        except BaseException as exc:  # SystemExit and KeyboardInterrupt are the user's too
            error = exc
            remote_traceback = _user_traceback(exc)
        finally:
            mirror.stop()  # before the cleanliness check counts the threads
    wall = time.perf_counter() - clock
    store.put(objects.stdout, stdout.data)
    store.put(objects.stderr, stderr.data)
    if error is None:
        store.put(objects.result, payload)
    else:
        store.put(objects.error, remote_traceback.encode())
    outcome = Outcome(
        job_id=spec.job_id,
        attempt=spec.attempt,
        status="ok" if error is None else "exception",
        wall_seconds=wall,
        started_at=started,
        finished_at=started + wall,
        exception_type=None if error is None else type(error).__qualname__[:500],
        message=None if error is None else _short(error),
        hostname=socket.gethostname(),
        ray_node_id=_ray_node_id(),
        pid=os.getpid(),
    )
    outcome = outcome.model_copy(update={"reusable": _left_clean(threads_before)})
    store.put(outcome_key(spec.job_id, spec.attempt), outcome.model_dump_json().encode())
    mirror.delete_parts()  # the whole outputs are there: readers no longer need them
    return outcome


def _thread_ids() -> set[int]:
    """The process's threads, native ones included (``/proc/self/task``)."""
    try:
        return {int(name) for name in os.listdir("/proc/self/task")}
    except OSError:
        return set()


def _left_clean(threads_before: set[int]) -> bool:
    """Whether the function left nothing running in or under this process: no new thread,
    no child process, no GPU memory held. A hygiene check for keeping a worker warm (an
    honest job's GPU memory is not held while idle); the process is the user's, so it is
    not a boundary against the user's own code."""
    if not _thread_ids() <= threads_before:
        return False
    pid = str(os.getpid())
    try:
        for task in os.listdir("/proc/self/task"):
            if Path(f"/proc/self/task/{task}/children").read_text().split():
                return False
    except OSError:
        return False
    return not _holds_gpu_memory(int(pid))


def _holds_gpu_memory(pid: int) -> bool:
    """Whether NVML lists this process on any GPU (no NVML, or no NVIDIA GPU: False)."""
    try:
        pynvml: Any = importlib.import_module("pynvml")
    except ImportError:
        return False
    try:
        pynvml.nvmlInit()
    except (pynvml.NVMLError, OSError):
        return False
    try:
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            running = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
            if any(process.pid == pid for process in running):
                return True
        return False
    except pynvml.NVMLError:
        return True  # cannot tell: not kept warm
    finally:
        pynvml.nvmlShutdown()


def _arguments(data: bytes | None) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if data is None:
        return (), {}
    args, kwargs = cloudpickle.loads(data)
    return tuple(args), dict(kwargs)


def _user_traceback(error: BaseException) -> str:
    """The traceback from the user's frames on (this module's own frame left out)."""
    frames = error.__traceback__
    if frames is not None and frames.tb_next is not None:
        frames = frames.tb_next
    return "".join(traceback.format_exception(type(error), error, frames))


def _short(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= MAX_MESSAGE_CHARS else text[: MAX_MESSAGE_CHARS - 3] + "..."


def _ray_node_id() -> str:
    try:
        import ray

        return str(ray.get_runtime_context().get_node_id())
    except Exception:  # outside Ray (a direct call): no node id
        return ""


#: While a job runs, what it printed since the last upload is appended to the object store
#: this often (a part, :mod:`gridweave_runtime.storage.logs`), so the platform's live log
#: (server-sent events) can follow it; the whole output is written once at the end.
LIVE_OUTPUT_SECONDS = 0.5


class _Captured:
    """What a file descriptor received while captured (``data`` once the capture ended)."""

    data: bytes = b""
    fileno: int = -1  # the capture file while capturing

    def since(self, offset: int) -> bytes:
        """What was written after ``offset`` until now (a positional read: the writers'
        offset stays)."""
        try:
            return os.pread(self.fileno, max(0, os.fstat(self.fileno).st_size - offset), offset)
        except OSError:
            return b""


#: how long ``_LiveOutput.stop`` waits for its thread's task to end after ``join``
_THREAD_EXIT_SECONDS = 1.0


class _LiveOutput:
    """A thread appending what each capture gained to its object's parts while it grows."""

    def __init__(self, store: Any, targets: list[tuple[str, _Captured]]) -> None:
        self._store = store
        self._targets = targets
        self._parts: list[str] = []
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gw-live-output", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        written = dict.fromkeys((key for key, _ in self._targets), 0)
        while not self._stopped.wait(LIVE_OUTPUT_SECONDS):
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()  # a print without flush=True still shows
                except (OSError, ValueError):
                    pass
            for key, captured in self._targets:
                new = captured.since(written[key])
                if not new:
                    continue
                part = log_part_key(key, written[key], written[key] + len(new))
                self._parts.append(part)  # deleted at the end even if its upload seemed to fail
                try:
                    self._store.put(part, new)
                except Exception:  # sent again, with what follows, at the next tick
                    continue
                written[key] += len(new)

    def stop(self) -> None:
        """Stop and wait for the thread (the final, whole outputs are the caller's) until
        the system has ended it too: ``join`` returns once its Python code is done, a moment
        before its task leaves ``/proc/self/task``, where the cleanliness check counts it."""
        self._stopped.set()
        native_id = self._thread.native_id
        self._thread.join()
        deadline = time.monotonic() + _THREAD_EXIT_SECONDS
        while os.path.exists(f"/proc/self/task/{native_id}") and time.monotonic() < deadline:
            time.sleep(0.001)

    def delete_parts(self) -> None:
        """Delete the parts uploaded (after the whole outputs were written)."""
        for part in self._parts:
            try:
                self._store.delete(part)
            except Exception:  # readers take the whole object first: a leftover part is unread
                continue


@contextmanager
def _captured(fd: int, stream: IO[str]) -> Iterator[_Captured]:
    """Point ``fd`` at a temporary file, so child processes and C code are captured too."""
    captured = _Captured()
    with tempfile.TemporaryFile() as handle:
        stream.flush()
        saved = os.dup(fd)
        os.dup2(handle.fileno(), fd)
        captured.fileno = handle.fileno()
        try:
            yield captured
        finally:
            stream.flush()
            os.dup2(saved, fd)
            os.close(saved)
            handle.seek(0)
            captured.data = handle.read()
