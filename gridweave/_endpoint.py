"""Endpoints: a model or a class of your own served on GPUs, at a URL of the platform.

    ep = gw.deploy("chat", model_ref="/home/me/.gridweave/models/gpt2", vram="4GB")  # under a
    # model root of the platform (PLATFORM_MODEL_ROOTS, default ~/.gridweave/models)
    client = openai.OpenAI(base_url=ep.openai_base_url, api_key=api_key)

    @gw.endpoint(vram="8GB", gpus=1)
    class Embedder:
        def embed(self, text: str) -> list[float]: ...

    ep = Embedder.deploy("embedder")
    ep.embed("hello")          # POST /v1/endpoints/embedder/embed, answered with JSON
    ep.stop()

    ep = gw.deploy("my-server", image="usr-.../server:v1", vram="8GB")  # its own server

A custom endpoint's class is pickled here (cloudpickle) and unpickled only in the endpoint's
containers, in the node's default image or the one named (``@gw.endpoint(image=...)``).
An image deployed alone serves with its own command, which must listen on ``$PORT``.
Each public method of a class is a route: ``POST /{method}`` whose JSON body is the
arguments (an array positional ones, an object keyword ones) and whose answer is the value.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

import httpx

from gridweave._client import platform_client, platform_errors
from gridweave._config import Config, current_config
from gridweave._image import Image, image_and_pip
from gridweave._pickling import dumps_program
from gridweave._remote import remote_exception
from gridweave._units import (
    parse_cpu,
    parse_duration,
    parse_gpu_models,
    parse_memory,
    parse_size,
)
from gridweave.errors import ConfigurationError, EndpointCallFailed, EndpointNotRunning
from gridweave_clients.platform.endpoints import EndpointResponse
from gridweave_controller.phases import EndpointStopReason

__all__ = [
    "CustomEndpoint",
    "Endpoint",
    "EndpointClass",
    "deploy",
    "endpoint",
    "get_endpoint",
]

T = TypeVar("T")
Vendor = Literal["nvidia", "amd", "any"]
Mode = Literal["vllm", "transformers", "custom"]
_CALL_TIMEOUT = httpx.Timeout(30.0, read=600.0)


@dataclass(frozen=True, slots=True)
class Scaling:
    """What an endpoint asks for, parsed once."""

    vram_mb: int
    gpu_count: int
    vendor: Vendor
    min_replicas: int
    max_replicas: int
    idle_seconds: int
    #: Each replica's memory (MiB) and CPU (thousandths of a core); None: the node's default.
    memory_mb: int | None = None
    cpu_millis: int | None = None
    #: The GPU models that will do, any of them; empty: any model of ``vendor``.
    gpu_models: tuple[str, ...] = ()

    @classmethod
    def parse(
        cls,
        *,
        vram: str | int,
        gpus: int,
        vendor: Vendor,
        min_replicas: int,
        max_replicas: int,
        idle: str | int | float,
        memory: str | int | None = None,
        cpu: float | None = None,
        gpu_model: str | Sequence[str] | None = None,
    ) -> Scaling:
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
            raise ConfigurationError(f"gpus={gpus!r}: must be a positive integer")
        if vendor not in ("nvidia", "amd", "any"):
            raise ConfigurationError(f"vendor={vendor!r}: must be nvidia, amd or any")
        if not 0 <= min_replicas <= max_replicas or max_replicas < 1:
            raise ConfigurationError(
                f"min_replicas={min_replicas!r}, max_replicas={max_replicas!r}: need "
                "0 <= min_replicas <= max_replicas and max_replicas >= 1"
            )
        return cls(
            vram_mb=parse_size(vram),
            gpu_count=gpus,
            vendor=vendor,
            min_replicas=min_replicas,
            max_replicas=max_replicas,
            idle_seconds=0 if idle in (0, "0") else parse_duration(idle, argument="idle"),
            memory_mb=parse_memory(memory),
            cpu_millis=parse_cpu(cpu),
            gpu_models=parse_gpu_models(gpu_model),
        )


class Endpoint:
    """A deployed endpoint of yours, by name: its URL, its status; call it, stop it."""

    def __init__(self, name: str, config: Config | None = None) -> None:
        self.name = name
        self._config = config or current_config()
        self._client = platform_client(self._config)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    @property
    def url(self) -> str:
        """Where the platform serves it (send the API key as ``Authorization: Bearer``)."""
        return f"{self._config.url}/v1/endpoints/{self.name}"

    @property
    def openai_base_url(self) -> str:
        """The ``base_url`` of an OpenAI client for a vllm or transformers endpoint."""
        return f"{self.url}/v1"

    def status(self) -> EndpointResponse:
        """The endpoint now: ``phase``, ``reason``, ``ready_replicas``, ``health``, ..."""
        with platform_errors(self._config.url):
            return self._client.get_endpoint(self.name)

    def stop(self) -> EndpointResponse:
        """Stop it: its GPUs freed, its usage settled (again: answered as it is)."""
        with platform_errors(self._config.url):
            return self._client.stop_endpoint(self.name)

    def wait_until_running(self, timeout: float = 600.0) -> EndpointResponse:
        """Poll until it runs, or has scaled to zero (Stopped, reason ``Idle``: the next call
        wakes it), ``timeout`` seconds at most.

        Raises:
            EndpointNotRunning: it failed or stopped, or ``timeout`` ran out (the message
                says why it still waits when the platform says: ``RealGpuBusy``, ...).
        """
        deadline = time.monotonic() + timeout
        delay = 0.1
        while True:
            status = self.status()
            idle = status.phase == "Stopped" and status.reason == EndpointStopReason.IDLE
            if status.phase == "Running" or idle:
                return status
            if status.phase in ("Failed", "Stopped"):
                raise EndpointNotRunning(self.name, status.phase, status.reason, status.message)
            if time.monotonic() >= deadline:
                waited = f"not running after {timeout:g} s"
                why = f"{waited}: {status.message}" if status.message else waited
                raise EndpointNotRunning(self.name, status.phase, status.reason, why)
            time.sleep(delay)
            delay = min(2.0, delay * 1.5)

    def request(self, method: str, path: str, **options: Any) -> httpx.Response:
        """One HTTP call to the endpoint (``path`` below its URL); httpx's ``options``."""
        headers = {**options.pop("headers", {}), "Authorization": f"Bearer {self._config.api_key}"}
        with httpx.Client(timeout=options.pop("timeout", _CALL_TIMEOUT)) as http:
            return http.request(
                method, f"{self.url}/{path.lstrip('/')}", headers=headers, **options
            )


class CustomEndpoint(Endpoint, Generic[T]):
    """A deployed class: its public methods called by name (``ep.predict(x)``)."""

    def __init__(self, name: str, methods: frozenset[str], config: Config | None = None) -> None:
        super().__init__(name, config)
        self.methods = methods

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call ``method`` remotely with JSON arguments; its JSON value.

        Raises:
            ConfigurationError: both positional and keyword arguments (the body is one).
            Exception: the method's own exception rebuilt (built-in types), else
                ``RemoteError``; either carries ``remote_traceback``.
            EndpointCallFailed: the endpoint or the platform answered another error.
        """
        if args and kwargs:
            raise ConfigurationError(
                f"{method}: pass positional or keyword arguments, not both (one JSON body)"
            )
        body: Any = kwargs if kwargs else list(args)
        response = self.request("POST", method, json=body)
        if response.status_code >= 400:
            raised = _raised_remotely(response)
            if raised is not None:
                raise remote_exception("", raised, origin=f"endpoint {self.name}: {method}")
            raise EndpointCallFailed(self.name, method, response.status_code, response.text)
        return response.json()

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_") or name not in self.__dict__.get("methods", ()):
            raise AttributeError(name)
        return lambda *args, **kwargs: self.call(name, *args, **kwargs)


def _raised_remotely(response: httpx.Response) -> str | None:
    """The traceback of a method that raised: the serving container's 500
    ``{"error": {"type", "message", "traceback"}}``; None for any other error."""
    if response.status_code != 500:
        return None
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return None
    trace = error.get("traceback") if isinstance(error, dict) else None
    return trace if isinstance(trace, str) and trace.strip() else None


def _deploy(
    name: str,
    scaling: Scaling,
    *,
    mode: Mode,
    model: str | None = None,
    model_ref: str | None = None,
    function: bytes | None = None,
    image: str | None = None,
    pip: tuple[str, ...] = (),
) -> Config:
    config = current_config()
    with platform_errors(config.url):
        platform_client(config).deploy_endpoint(
            name,
            mode=mode,
            model=model,
            model_ref=model_ref,
            function=function,
            image=image,
            pip=list(pip) or None,
            vram_mb=scaling.vram_mb,
            gpu_count=scaling.gpu_count,
            vendor=scaling.vendor,
            gpu_models=list(scaling.gpu_models) or None,
            memory_mb=scaling.memory_mb,
            cpu_millis=scaling.cpu_millis,
            min_replicas=scaling.min_replicas,
            max_replicas=scaling.max_replicas,
            idle_seconds=scaling.idle_seconds,
        )
    return config


def deploy(
    name: str,
    *,
    model: str | None = None,
    model_ref: str | None = None,
    mode: Literal["vllm", "transformers"] = "transformers",
    vram: str | int = "8GB",
    gpus: int = 1,
    vendor: Vendor = "any",
    min_replicas: int = 0,
    max_replicas: int = 1,
    idle: str | int | float = "5m",
    image: str | Image | None = None,
    pip: list[str] | None = None,
    memory: str | int | None = None,
    cpu: float | None = None,
    gpu_model: str | Sequence[str] | None = None,
) -> Endpoint:
    """Serve a model (``model`` a name, ``model_ref`` its directory) with an OpenAI API, or
    an image of the platform's registry whose command serves HTTP on ``$PORT``
    (``image``: ``"<your user id>/server:v1"``; every request to the endpoint reaches it),
    with ``pip`` (an image only: requirements of packages of the index, ``["numpy==2.1.3"]``)
    installed for it, first on its ``PYTHONPATH`` (or both as one ``gw.Image``:
    ``gw.Image("<your user id>/server:v1").pip_install("numpy==2.1.3")``). ``memory``
    ("16GB") and ``cpu`` (cores) are each replica's (None: the node's defaults per GPU; a
    vllm server runs outside the sandbox and is placed by them only); ``gpu_model``
    ("A100", or a list of models that will do) narrows ``vendor``.

    Raises:
        ConfigurationError: neither or both of a model and an image, a bad image name, or
            pip for a model (it serves with the node's own packages) or a bad requirement.
        InsufficientCredits: 402, not the credits of two billing periods at max replicas.
        NoGpuLargeEnough: 422, no GPU of the platform could ever hold it.
        ImageRefused / a 404: the image is another user's, or not in the registry.
    """
    if image is not None:
        if model is not None or model_ref is not None:
            raise ConfigurationError("deploy: give a model or an image, not both")
    elif model is None and model_ref is None:
        raise ConfigurationError("deploy: give model or model_ref (or an image)")
    elif pip:
        raise ConfigurationError(f"pip={pip!r}: a {mode} endpoint serves with the node's packages")
    image_name, requirements = image_and_pip(image, pip)
    if image is not None and image_name is None:
        raise ConfigurationError(
            "image: an endpoint serves an image of the registry by its name, "
            'gw.Image("<your user id>/server:v1")'
        )
    scaling = Scaling.parse(
        vram=vram,
        gpus=gpus,
        vendor=vendor,
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        idle=idle,
        memory=memory,
        cpu=cpu,
        gpu_model=gpu_model,
    )
    if image_name is not None:
        config = _deploy(name, scaling, mode="custom", image=image_name, pip=requirements)
    else:
        config = _deploy(name, scaling, mode=mode, model=model, model_ref=model_ref)
    return Endpoint(name, config)


def get_endpoint(name: str) -> Endpoint:
    """An endpoint of yours deployed earlier, by name."""
    return Endpoint(name)


def _public_methods(cls: type[Any]) -> frozenset[str]:
    return frozenset(
        name for name in dir(cls) if not name.startswith("_") and callable(getattr(cls, name))
    )


class EndpointClass(Generic[T]):
    """A class made deployable by ``@gw.endpoint``; calling it still makes a local instance."""

    def __init__(
        self,
        cls: type[T],
        scaling: Scaling,
        image: str | None = None,
        pip: tuple[str, ...] = (),
    ) -> None:
        self.cls = cls
        self.scaling = scaling
        self.image = image
        self.pip = pip
        self.methods = _public_methods(cls)

    def __call__(self, *args: Any, **kwargs: Any) -> T:
        return self.cls(*args, **kwargs)

    def deploy(self, name: str | None = None) -> CustomEndpoint[T]:
        """Pickle the class and serve it as ``name`` (default: the class's name, kebab-case)."""
        name = name or _kebab(self.cls.__name__)
        config = _deploy(
            name,
            self.scaling,
            mode="custom",
            function=dumps_program(self.cls),
            image=self.image,
            pip=self.pip,
        )
        return CustomEndpoint(name, self.methods, config)

    def connect(self, name: str | None = None) -> CustomEndpoint[T]:
        """The endpoint this class was deployed as (no new deployment)."""
        return CustomEndpoint(name or _kebab(self.cls.__name__), self.methods)


def endpoint(
    *,
    vram: str | int,
    gpus: int = 1,
    vendor: Vendor = "any",
    min_replicas: int = 0,
    max_replicas: int = 1,
    idle: str | int | float = "5m",
    image: str | Image | None = None,
    pip: list[str] | None = None,
    memory: str | int | None = None,
    cpu: float | None = None,
    gpu_model: str | Sequence[str] | None = None,
) -> Callable[[type[T]], EndpointClass[T]]:
    """Make a class deployable as an endpoint whose public methods are its routes; it runs
    in ``image`` (of the platform's registry, built on ``gridweave/python:3.11``), else the
    node's default image, with ``pip`` (requirements of packages of the index by name,
    ``["numpy==2.1.3"]``) installed for it: on the node, once per image and list, before its
    first replica starts (pip's output in the endpoint's logs; a failed install fails the
    endpoint ``PipInstallFailed``); or both as one ``gw.Image(...).pip_install(...)``. Each
    replica's container gets ``memory`` ("16GB") and ``cpu`` (cores), else the node's
    defaults per GPU; ``gpu_model`` ("A100", or a list of models that will do) narrows
    ``vendor``."""
    scaling = Scaling.parse(
        vram=vram,
        gpus=gpus,
        vendor=vendor,
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        idle=idle,
        memory=memory,
        cpu=cpu,
        gpu_model=gpu_model,
    )

    image_name, requirements = image_and_pip(image, pip)

    def decorate(cls: type[T]) -> EndpointClass[T]:
        if not isinstance(cls, type):
            raise ConfigurationError("@gw.endpoint decorates a class")
        return EndpointClass(cls, scaling, image_name, requirements)

    return decorate


def _kebab(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()).strip("-")
