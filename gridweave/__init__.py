"""Gridweave's Python SDK: run a function of your own on a GPU slice of the platform.

    import gridweave as gw

    @gw.function(vram="16GB", vendor="nvidia", timeout="10m")
    def square(x: int) -> int:
        return x * x

    square.remote(7)          # 49, computed on the platform
    square.map(range(10))     # in order, at most 16 in flight
    job = square.spawn(3); job.status(); job.logs(); job.result(timeout=60)

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
from gridweave._function import DEFAULT_MAP_CONCURRENCY, Function, JobHandle, function
from gridweave._units import parse_duration, parse_size
from gridweave.errors import (
    ConfigurationError,
    GridweaveError,
    InsufficientCredits,
    JobDidNotComplete,
    JobNotFinished,
    MapItemFailed,
    NoGpuLargeEnough,
    PlatformUnreachable,
    RemoteError,
)

__all__ = [
    "DEFAULT_MAP_CONCURRENCY",
    "DEFAULT_URL",
    "Config",
    "ConfigurationError",
    "Function",
    "GridweaveError",
    "InsufficientCredits",
    "JobDidNotComplete",
    "JobHandle",
    "JobNotFinished",
    "MapItemFailed",
    "NoGpuLargeEnough",
    "PlatformUnreachable",
    "RemoteError",
    "config_path",
    "configure",
    "current_config",
    "function",
    "parse_duration",
    "parse_size",
    "write_config",
]
