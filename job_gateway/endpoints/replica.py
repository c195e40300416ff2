"""The Ray Serve replica of an endpoint: the trusted side next to the user's class or model.

This module runs only inside a Serve replica process, never in the gateway. A ``custom``
endpoint's code (the user's class, or the image's own server) and a ``transformers``
endpoint's model run in a container of its owner
(:mod:`job_gateway.endpoints.sandboxed_backend`), never in this process: the replica relays
requests to it and unpickles nothing. Before any backend loads, the process is shown
exactly the GPUs the gateway chose (``CUDA_VISIBLE_DEVICES`` / ``HIP_VISIBLE_DEVICES``, as
the job workers do).

Every request but the statistics route counts: the time of the last one and how many are
under way answer ``GET /-/gw/stats``, which the reconciler's probe reads for health and
for the idle rule (scale to zero).

Serve's HTTP proxy has no auth, so the replica checks every request for the cluster's Serve
key (``gridweave_runtime.serve_key``: the platform's proxy and the probe send it) against
the digest it was given, answers 401 without it, and removes the header before the backend
(the user's code) sees the request.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from gridweave_runtime.serve_key import SERVE_KEY_HEADER, serve_key_matches
from gridweave_runtime.storage import StorageConfig, open_object_store
from job_gateway.sandbox.config import SandboxConfig
from job_gateway.sandbox.images import ImagePull
from job_gateway.sandbox.transformers_server import error_response  # OpenAI's error shape

__all__ = [
    "STATS_PATH",
    "Backend",
    "EndpointReplica",
    "ReplicaConfig",
    "VllmLaunch",
    "error_response",
]

#: The replica's own route: request statistics, never counted as a request.
STATS_PATH = "/-/gw/stats"
_DEVICE_VARIABLES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


@dataclass(frozen=True, slots=True)
class VllmLaunch:
    """How a ``vllm`` replica starts vLLM (``job_gateway.endpoints.vllm_backend``)."""

    #: The interpreter of the virtualenv that has vLLM, on the replica's node.
    python: str
    #: Extra arguments of vLLM's OpenAI server (``GATEWAY_VLLM_ARGS``).
    args: tuple[str, ...] = ()
    #: The endpoint's share of each placed GPU's memory (``vramMb`` over the smallest
    #: GPU's); None on simulated GPUs, where vLLM's CPU build serves.
    gpu_memory_fraction: float | None = None
    #: The CPU build's KV cache, GiB (``VLLM_CPU_KVCACHE_SPACE``).
    cpu_kv_cache_gib: int = 1


@dataclass(frozen=True, slots=True)
class ReplicaConfig:
    """What a replica needs to serve one endpoint (plain values: it travels to Ray)."""

    endpoint_id: str
    mode: str
    storage: StorageConfig
    #: SHA-256 of the Serve key every request must carry (the key itself never comes here).
    key_digest: str
    devices: dict[str, str] = field(default_factory=dict)
    model: str | None = None
    model_ref: str | None = None
    function_ref: str | None = None
    vllm: VllmLaunch | None = None
    #: A custom or transformers endpoint's container: the node's sandbox, the owner (its
    #: uid), the placed GPUs, and the image with the owner's pull token (None: the node's
    #: default image).
    sandbox: SandboxConfig | None = None
    owner: str | None = None
    vendor: str = "any"
    gpu_indices: tuple[int, ...] = ()
    image: ImagePull | None = None
    #: A custom endpoint's pip= requirements: an environment of the node's cache (built
    #: first when it is not there) mounted read-only in its container.
    pip: tuple[str, ...] = ()
    #: Each replica's container's memory (MiB) and CPU (thousandths of a core); None: the
    #: node's defaults per GPU.
    memory_mb: int | None = None
    cpu_millis: int | None = None


class Backend(Protocol):
    """One mode's routes: answer ``method path`` (the endpoint's own prefix removed)."""

    async def handle(self, method: str, path: str, request: Request) -> Response:
        """The response to one request."""
        ...


class EndpointReplica:
    """A Serve deployment class: counts requests and hands them to the mode's backend."""

    def __init__(self, config: ReplicaConfig) -> None:
        for name in _DEVICE_VARIABLES:  # nothing inherited: exactly the chosen GPUs
            os.environ.pop(name, None)
        os.environ.update(config.devices)
        self.config = config
        self.replica_id = uuid.uuid4().hex[:12]
        self.started_at = time.time()
        self.last_request_at = self.started_at  # a new replica is not idle yet
        self.in_flight = 0
        self.requests = 0
        self.backend = load_backend(config)

    async def check_health(self) -> None:
        """Serve's health check: a backend with a server of its own asks it (an exception
        here and Serve replaces the replica)."""
        check = getattr(self.backend, "check_health", None)
        if check is not None:
            await check()

    def __del__(self) -> None:
        """Serve's replica shutdown: a backend with a process of its own ends it."""
        close = getattr(getattr(self, "backend", None), "close", None)
        if close is not None:
            close()

    def stats(self) -> dict[str, Any]:
        """What the probe reads: the replica, its last request and the ones under way."""
        return {
            "endpoint_id": self.config.endpoint_id,
            "replica": self.replica_id,
            "pid": os.getpid(),
            "started_at": self.started_at,
            "last_request_at": self.last_request_at,
            "in_flight": self.in_flight,
            "requests": self.requests,
            "devices": {k: v for k, v in os.environ.items() if k in _DEVICE_VARIABLES},
        }

    async def __call__(self, request: Request) -> Response:
        """Route one HTTP request (``/gw/<id>/...`` reaches here as ``...``)."""
        if not serve_key_matches(request.headers.get(SERVE_KEY_HEADER), self.config.key_digest):
            return error_response(
                401, "unauthorized", "call endpoints through the Gridweave platform"
            )
        request = _without_key(request)
        path = _own_path(request)
        if path == STATS_PATH:
            return JSONResponse(self.stats())
        self.requests += 1
        self.in_flight += 1
        self.last_request_at = time.time()
        try:
            response = await self.backend.handle(request.method, path, request)
        except BaseException:
            self._done()
            raise
        if isinstance(response, StreamingResponse):
            response.body_iterator = self._counted(response.body_iterator)
        else:
            self._done()
        return response

    async def _counted(self, body: AsyncIterable[Any]) -> AsyncIterator[Any]:
        try:
            async for chunk in body:
                yield chunk
        finally:
            self._done()

    def _done(self) -> None:
        self.in_flight -= 1
        self.last_request_at = time.time()


def _without_key(request: Request) -> Request:
    """The request as the backend sees it: without the Serve key's header."""
    key = SERVE_KEY_HEADER.encode()
    scope = dict(request.scope)
    scope["headers"] = [(k, v) for k, v in request.scope["headers"] if k.lower() != key]
    return Request(scope, request.receive)


def _own_path(request: Request) -> str:
    path: str = request.scope.get("path", "/")
    root: str = request.scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :]
    return path if path.startswith("/") else "/" + path


def load_backend(config: ReplicaConfig) -> Backend:
    """The backend of ``config.mode`` (imports only what that mode needs)."""
    if config.mode in ("custom", "transformers"):
        from job_gateway.endpoints.sandboxed_backend import SandboxedBackend

        return SandboxedBackend.start(config)
    if config.mode == "vllm":
        from job_gateway.endpoints.vllm_backend import VllmBackend

        return VllmBackend(config, read_object=_reader(config))
    raise RuntimeError(f"mode {config.mode!r} is not served by this replica")


def _reader(config: ReplicaConfig) -> Callable[[str], bytes]:
    store = open_object_store(config.storage)
    return store.get
