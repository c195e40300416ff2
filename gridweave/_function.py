"""``@gw.function``: a Python function that runs on a GPU slice of the platform."""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, ParamSpec, TypeVar, cast

import cloudpickle

from gridweave._client import platform_client, platform_errors
from gridweave._config import Config, current_config
from gridweave._image import Image, image_and_pip
from gridweave._map import (
    DEFAULT_MAP_CONCURRENCY,
    MapHandle,
    single_argument_calls,
    star_calls,
    submit_map,
)
from gridweave._pickling import dumps, dumps_program
from gridweave._remote import remote_exception
from gridweave._units import (
    parse_cpu,
    parse_duration,
    parse_gpu_models,
    parse_memory,
    parse_size,
)
from gridweave.errors import (
    ConfigurationError,
    JobDidNotComplete,
    JobNotFinished,
    OutOfMemory,
)
from gridweave_clients import Conflict
from gridweave_clients.gateway.reasons import OUT_OF_MEMORY, out_of_memory_limit_mb
from gridweave_clients.platform.models import JobLogsResponse, JobResponse

__all__ = ["DEFAULT_MAP_CONCURRENCY", "Function", "JobHandle", "function"]

P = ParamSpec("P")
R = TypeVar("R")
Vendor = Literal["nvidia", "amd", "any"]

#: At most this many of a ``.map``'s jobs are submitted and not yet finished at once.
# Polling a result: start short (a warm job finishes in well under a second), back off.
#: One long poll of a result (the platform's and the gateway's limit is 30 s).
_LONG_POLL_SECONDS = 20.0


@dataclass(frozen=True, slots=True)
class Resources:
    """What each call of a function asks for, parsed once at decoration."""

    vram_mb: int
    gpu_count: int
    vendor: Vendor
    timeout_seconds: int
    max_retries: int
    memory_mb: int | None = None
    cpu_millis: int | None = None
    image: str | None = None
    pip: tuple[str, ...] = ()
    gpu_models: tuple[str, ...] = ()


class JobHandle(Generic[R]):
    """One submitted call: its ``job_id``, status, result, logs; cancel it."""

    def __init__(self, job: JobResponse, config: Config) -> None:
        self.job_id = job.job_id
        self._config = config
        self._client = platform_client(config)

    def __repr__(self) -> str:
        return f"JobHandle({self.job_id!r})"

    def status(self) -> JobResponse:
        """The job as the platform sees it now (``phase``, ``finished``, ``node``, ...)."""
        with platform_errors(self._config.url):
            return self._client.get_job(self.job_id)

    def logs(self) -> JobLogsResponse:
        """What the job printed so far (stdout and stderr)."""
        with platform_errors(self._config.url):
            return self._client.get_job_logs(self.job_id)

    def cancel(self) -> JobResponse:
        """Cancel the job (again: answered as it is); a finished job's ``Conflict`` passes."""
        with platform_errors(self._config.url):
            return self._client.cancel_job(self.job_id)

    def result(self, timeout: float | None = None) -> R:
        """Wait for the job's value (``timeout`` seconds at most; None: as long as it takes).

        Raises:
            JobNotFinished: ``timeout`` ran out; the job goes on.
            Exception: the function's own exception rebuilt (built-in types), else
                ``RemoteError``; either carries ``remote_traceback``.
            JobDidNotComplete: cancelled, timed out or lost without a traceback.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = _LONG_POLL_SECONDS if deadline is None else deadline - time.monotonic()
            # a long poll: the platform answers as soon as the job finishes
            wait = round(max(0.0, min(left, _LONG_POLL_SECONDS)), 3)
            try:
                with platform_errors(self._config.url):
                    payload = self._client.get_job_result(self.job_id, wait=wait)
            except Conflict as exc:
                if exc.code != "job_not_finished":
                    raise self._failure(exc) from None
                if deadline is not None and time.monotonic() >= deadline:
                    raise JobNotFinished(self.job_id, str(exc.details.get("phase", ""))) from None
                continue
            # The SDK unpickles only what the user's own function returned, on their machine.
            return cast(R, cloudpickle.loads(payload))

    def _failure(self, refusal: Conflict) -> Exception:
        details = refusal.details
        traceback = details.get("traceback")
        if refusal.code == "job_did_not_complete" and isinstance(traceback, str) and traceback:
            return remote_exception(self.job_id, traceback)
        if refusal.code == "job_did_not_complete" and details.get("reason") == OUT_OF_MEMORY:
            message = details.get("job_message")
            return OutOfMemory(
                refusal.message,
                job_id=self.job_id,
                phase=str(details.get("phase", "")),
                limit_mb=out_of_memory_limit_mb(message if isinstance(message, str) else None),
            )
        if refusal.code == "job_did_not_complete":
            return JobDidNotComplete(
                refusal.message,
                job_id=self.job_id,
                phase=str(details.get("phase", "")),
                reason=details.get("reason") if isinstance(details.get("reason"), str) else None,
            )
        return refusal


class Function(Generic[P, R]):
    """A function made remote by ``@gw.function``; calling it directly still runs it here."""

    def __init__(self, fn: Callable[P, R], resources: Resources) -> None:
        self.fn = fn
        self.resources = resources
        functools.update_wrapper(self, fn)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    def spawn(self, *args: P.args, **kwargs: P.kwargs) -> JobHandle[R]:
        """Submit one call and return at once with its handle.

        Raises:
            InsufficientCredits: 402, the hold could not be placed.
            NoGpuLargeEnough: 422, no GPU of the platform could ever hold the job.
            PlatformUnreachable: no usable answer from the platform.
        """
        config = current_config()
        function = dumps_program(self.fn)
        arguments = dumps((args, kwargs)) if args or kwargs else None
        resources = self.resources
        client = platform_client(config)
        with platform_errors(config.url):
            # One key per call: the client's retry of a lost answer gets the same job back.
            job = client.submit_job(
                function,
                arguments,
                vram_mb=resources.vram_mb,
                gpu_count=resources.gpu_count,
                vendor=resources.vendor,
                timeout_seconds=resources.timeout_seconds,
                max_retries=resources.max_retries,
                idempotency_key=f"sdk-{uuid.uuid4().hex}",
                function_name=_function_name(self.fn),
                memory_mb=resources.memory_mb,
                cpu_millis=resources.cpu_millis,
                image=resources.image,
                pip=list(resources.pip) or None,
                gpu_models=list(resources.gpu_models) or None,
            )
        return JobHandle(job, config)

    def remote(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Run one call on the platform and wait for its value (or its exception)."""
        return self.spawn(*args, **kwargs).result()

    @property
    def name(self) -> str | None:
        """The name job lists show (the function's qualified name)."""
        return _function_name(self.fn)

    def map(
        self,
        items: Iterable[Any],
        *,
        concurrency: int = DEFAULT_MAP_CONCURRENCY,
        return_exceptions: bool = False,
        retries: int | None = None,
    ) -> list[R]:
        """Call the function once per item (one argument each); values in the items' order.

        One map of at most ``concurrency`` workers, each one allocation of the function's
        GPUs that runs its share of the items in turn. An item that raises is tried again
        ``retries`` times (default: the function's ``retries``); a failed item never stops
        the others. Then its error takes its place (``return_exceptions``), or
        ``MapItemFailed`` names the first failed index, its error (with the remote
        traceback) chained.
        """
        handle = self.spawn_map(items, concurrency=concurrency, retries=retries)
        return cast(list[R], handle.results(return_exceptions=return_exceptions))

    def starmap(
        self,
        items: Iterable[Iterable[Any]],
        *,
        concurrency: int = DEFAULT_MAP_CONCURRENCY,
        return_exceptions: bool = False,
        retries: int | None = None,
    ) -> list[R]:
        """``map`` with each item unpacked as the positional arguments: ``f(*item)``."""
        handle = submit_map(
            self,
            star_calls(items),
            concurrency=concurrency,
            retries=retries,
            config=current_config(),
        )
        return cast(list[R], handle.results(return_exceptions=return_exceptions))

    def spawn_map(
        self,
        items: Iterable[Any],
        *,
        concurrency: int = DEFAULT_MAP_CONCURRENCY,
        retries: int | None = None,
    ) -> MapHandle[R]:
        """Submit the map and return at once: its handle shows progress (``status()``,
        ``wait()``), gives the results (``results()``) and cancels it."""
        return submit_map(
            self,
            single_argument_calls(items),
            concurrency=concurrency,
            retries=retries,
            config=current_config(),
        )


def _function_name(fn: Callable[..., Any]) -> str | None:
    """The name job lists show: the qualified name, control characters dropped, cut to fit."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if not isinstance(name, str):
        return None
    printable = "".join(char for char in name if char.isprintable())
    return printable[:253] or None


def _vendor(value: str) -> Vendor:
    if value not in ("nvidia", "amd", "any"):
        raise ConfigurationError(f"vendor={value!r}: expected 'nvidia', 'amd' or 'any'")
    return cast(Vendor, value)


def _count(value: int, argument: str, *, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigurationError(f"{argument}={value!r}: expected an integer >= {least}")
    return value


def function(
    *,
    vram: str | int,
    vendor: str = "any",
    gpus: int = 1,
    timeout: str | int | float = "10m",
    retries: int = 0,
    memory: str | int | None = None,
    cpu: float | None = None,
    image: str | Image | None = None,
    pip: Sequence[str] | None = None,
    gpu_model: str | Sequence[str] | None = None,
) -> Callable[[Callable[P, R]], Function[P, R]]:
    """Make a function remote: each call gets ``gpus`` GPUs of one node, ``vram`` on each.

    Args:
        vram: VRAM per GPU: "16GB", "512MiB", "16000MB" (an int: MiB).
        vendor: "nvidia", "amd" or "any".
        gpus: GPUs per call, all on one node.
        timeout: the longest a call may run: "90s", "10m", "1h" (a number: seconds); the
            credit hold is price x timeout x GPUs.
        retries: how often the platform runs a call again after its node was lost.
        memory: the call's memory limit (host RAM, its files in /scratch included): "8GB"
            (an int: MiB); past it the call fails with ``OutOfMemory``. None: the node's
            default per GPU.
        cpu: the CPU cores the call may use (2.5: two and a half). None: the node's
            default per GPU.
        image: the image the call runs in, from the platform's registry without its host:
            "<your user id>/tools:v2", one shared with you, or a public "gridweave/..." one
            (build it FROM gridweave/python:3.11: it needs the cluster's Python). The tag is
            pinned to its digest when the call is submitted. None: the node's default image.
            A ``gw.Image`` names the image and the packages pip installs for it:
            ``gw.Image("alice/tools:v2").pip_install("numpy==2.1.3")`` (``gw.Image()``: the
            node's default image).
        pip: Python packages to install for the call, as pip requirements of packages of
            the index by name: ["numpy==2.1.3", "requests"] (no pip option, URL or path).
            Each node installs them once per image and list, before the first call that
            asks for them (pip's output is the call's log; a failed install fails the call
            with ``PipInstallFailed``, billing no GPU time), and puts them first on its
            ``sys.path``.
        gpu_model: the GPU model the call needs, or several that will do: "A100",
            ["A100", "H100"], "A100 80GB" (every word a word of the GPU's model, so "A100"
            is any A100). All of a call's GPUs are of one model. None: any model of
            ``vendor``.

    Raises:
        ConfigurationError: an argument is not understood; the message names it.
    """
    image_name, requirements = image_and_pip(image, pip)
    resources = Resources(
        vram_mb=parse_size(vram, argument="vram"),
        gpu_count=_count(gpus, "gpus", least=1),
        vendor=_vendor(vendor),
        timeout_seconds=parse_duration(timeout, argument="timeout"),
        max_retries=_count(retries, "retries", least=0),
        memory_mb=parse_memory(memory),
        cpu_millis=parse_cpu(cpu),
        image=image_name,
        pip=requirements,
        gpu_models=parse_gpu_models(gpu_model),
    )

    def decorate(fn: Callable[P, R]) -> Function[P, R]:
        return Function(fn, resources)

    return decorate
