"""The validation rate limit: a sliding window per client address, in this process.

``/v1/nodes/validate`` is public: the limit stops a client from trying join keys in bulk.
It is kept in memory (kuberay-service runs once, on the master): a restart forgets it, which
only lets a client start over, and the keys are 32 random bytes anyway.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable

from kuberay_service.errors import ValidationRateLimited

__all__ = ["AddressRateLimiter"]

#: Addresses remembered at most; past it the longest-idle ones are forgotten.
_MAX_ADDRESSES = 100_000


class AddressRateLimiter:
    """Allows ``limit`` calls per address in any ``window_seconds``."""

    def __init__(
        self,
        limit: int,
        window_seconds: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self.window_seconds = window_seconds
        self._clock = clock
        self._calls: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def count(self, address: str) -> None:
        """Count one call from ``address``.

        Raises:
            ValidationRateLimited: ``limit`` calls were counted in the window; nothing counted.
        """
        now = self._clock()
        with self._lock:
            calls = self._calls.pop(address, None) or deque()
            while calls and calls[0] <= now - self.window_seconds:
                calls.popleft()
            self._calls[address] = calls  # re-inserted: the dict stays in idle order
            if len(calls) >= self.limit:
                retry_after = max(1, math.ceil(calls[0] + self.window_seconds - now))
                raise ValidationRateLimited(
                    f"too many validations from {address}: {self.limit} per "
                    f"{self.window_seconds:g} s; retry in {retry_after} s",
                    retry_after_seconds=retry_after,
                )
            calls.append(now)
            while len(self._calls) > _MAX_ADDRESSES:
                del self._calls[next(iter(self._calls))]
