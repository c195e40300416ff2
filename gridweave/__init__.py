"""Gridweave's Python SDK: run a function of your own on a GPU slice of the platform.

    import gridweave as gw

    @gw.function(vram="16GB", vendor="nvidia", timeout="10m")
    def square(x: int) -> int:
        return x * x

    square.remote(7)          # 49, computed on the platform
    square.map(range(10))     # in order, at most 16 in flight
    job = square.spawn(3); job.status(); job.logs(); job.result(timeout=60)

Endpoints (``gridweave._endpoint``)::

    ep = gw.deploy("chat", model_ref="/home/me/.gridweave/models/gpt2", vram="4GB")  # OpenAI API
    ep.url, ep.openai_base_url, ep.status(), ep.stop()

    @gw.endpoint(vram="8GB", gpus=1)
    class Embedder:
        def embed(self, text: str) -> list[float]: ...

    Embedder.deploy("embedder").embed("hello")

Spending limits (``gridweave._spending``): ``gw.set_spending_limits(monthly=50, per_job=5)``
(credits), ``gw.spending_limits()``; a submission past one raises ``gw.SpendingLimitReached``.

Configuration: ``gw.configure()``, else ``GRIDWEAVE_URL`` / ``GRIDWEAVE_API_KEY``, else the
file ``gridweave login`` writes (``gridweave._config``). Errors: ``gridweave.errors``.
"""

from __future__ import annotations

from gridweave._config import (
    DEFAULT_URL,
    Config,
    config_path,
    configure,
    current_config,
    write_config,
)
from gridweave._endpoint import (
    CustomEndpoint,
    Endpoint,
    EndpointClass,
    deploy,
    endpoint,
    get_endpoint,
)
from gridweave._function import Function, JobHandle, function
from gridweave._image import Image
from gridweave._map import DEFAULT_MAP_CONCURRENCY, MapHandle
from gridweave._spending import SpendingLimits, set_spending_limits, spending_limits
from gridweave._units import parse_duration, parse_size
from gridweave.errors import (
    ConfigurationError,
    EndpointCallFailed,
    EndpointNotRunning,
    GridweaveError,
    InsufficientCredits,
    JobDidNotComplete,
    JobNotFinished,
    MapItemFailed,
    NoGpuLargeEnough,
    OutOfMemory,
    PlatformUnreachable,
    QuotaExceeded,
    RemoteError,
    SpendingLimitReached,
)

__all__ = [
    "DEFAULT_MAP_CONCURRENCY",
    "DEFAULT_URL",
    "Config",
    "ConfigurationError",
    "CustomEndpoint",
    "Endpoint",
    "EndpointCallFailed",
    "EndpointClass",
    "EndpointNotRunning",
    "Function",
    "GridweaveError",
    "Image",
    "InsufficientCredits",
    "JobDidNotComplete",
    "JobHandle",
    "MapHandle",
    "JobNotFinished",
    "MapItemFailed",
    "NoGpuLargeEnough",
    "QuotaExceeded",
    "OutOfMemory",
    "PlatformUnreachable",
    "RemoteError",
    "SpendingLimitReached",
    "SpendingLimits",
    "config_path",
    "configure",
    "current_config",
    "deploy",
    "endpoint",
    "function",
    "get_endpoint",
    "parse_duration",
    "parse_size",
    "set_spending_limits",
    "spending_limits",
    "write_config",
]
