"""The platform client the SDK shares per (URL, key), and its errors in the SDK's terms."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from gridweave._config import Config, current_config
from gridweave.errors import (
    InsufficientCredits,
    NoGpuLargeEnough,
    PlatformUnreachable,
    QuotaExceeded,
    SpendingLimitReached,
)
from gridweave_clients import InvalidRequest, PaymentRequired, RateLimited, ServiceUnavailable
from gridweave_clients.platform import PlatformClient

__all__ = ["platform_client", "platform_errors"]

# Fields the gateway names when no GPU of the inventory could ever hold a job.
_PLACEMENT_FIELDS = frozenset(
    {"vram_mb", "gpu_count", "vendor", "gpu_models", "cpu_millis", "memory_mb"}
)
_LARGEST = re.compile(r"largest GPU is .*? with (\d+) MiB")

_lock = threading.Lock()
_clients: dict[Config, PlatformClient] = {}


def platform_client(config: Config | None = None) -> PlatformClient:
    """The client for ``config`` (default: the configuration in force), made once."""
    config = config or current_config()
    with _lock:
        client = _clients.get(config)
        if client is None:
            client = PlatformClient(config.url, config.api_key, timeout=60.0)
            _clients[config] = client
        return client


@contextmanager
def platform_errors(url: str) -> Iterator[None]:
    """Raise the client's unreachable, 402 (credits or a spending cap), quota (429) and
    no-such-GPU errors as the SDK's own."""
    try:
        yield
    except ServiceUnavailable as exc:
        raise PlatformUnreachable(exc.message, url=url) from exc
    except PaymentRequired as exc:
        if exc.code == "spending_limit":
            spent = {key: _whole(exc.details.get(key)) for key in ("limit", "spent", "asked")}
            cap = str(exc.details.get("cap") or "")
            raise SpendingLimitReached(exc.message, cap=cap, **spent) from exc
        figures = {key: int(exc.details.get(key, 0)) for key in ("balance", "held", "needed")}
        available = int(exc.details.get("available", figures["balance"] - figures["held"]))
        raise InsufficientCredits(exc.message, available=available, **figures) from exc
    except RateLimited as exc:
        if exc.code != "quota_exceeded":
            raise
        figures = {key: _whole(exc.details.get(key)) for key in ("limit", "in_use", "asked")}
        quota = exc.details.get("quota")
        raise QuotaExceeded(exc.message, quota=str(quota or ""), **figures) from exc
    except InvalidRequest as exc:
        fields = exc.fields
        if not fields or fields[0]["field"] not in _PLACEMENT_FIELDS:
            raise
        message = fields[0]["message"]
        largest = _LARGEST.search(message)
        raise NoGpuLargeEnough(
            message,
            field=fields[0]["field"],
            largest_vram_mb=int(largest.group(1)) if largest else None,
        ) from exc


def _whole(value: object) -> int:
    """A figure of an error's details as an int (0 when it is missing or not a number)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
