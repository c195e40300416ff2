"""API keys accepted a moment ago: a request that presents one costs no database round trip.

Every request's key used to be read (and its last use written) in PostgreSQL: two
statements and a commit on a worker thread, a few milliseconds of every call, which
dominated what the platform adds to a call proxied to a model endpoint. A key accepted
within ``seconds`` is accepted again from memory, with the user and role it had then.

What is kept: a SHA-256 of the presented key (never the key), the user, and when.
Revocation through this process forgets the key at once (:meth:`AcceptedKeys.forget`); a
key revoked through another platform process is accepted here for at most ``seconds``
more (``PLATFORM_API_KEY_CACHE_SECONDS``; 0 keeps nothing). The last-use time stays exact
to its own resolution (a minute): an entry expires long before that.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict

from platform_service.services.keys import AuthenticatedUser

__all__ = ["DEFAULT_CAPACITY", "AcceptedKeys"]

#: Keys remembered at most (the least recently accepted go first).
DEFAULT_CAPACITY = 10_000


class AcceptedKeys:
    """The keys accepted in the last ``seconds``, by a digest of the key."""

    def __init__(self, seconds: float, capacity: int = DEFAULT_CAPACITY) -> None:
        self.seconds = seconds
        self.capacity = capacity
        self._accepted: OrderedDict[bytes, tuple[float, AuthenticatedUser]] = OrderedDict()
        # revoked here: never remembered again (a check that read the key just before the
        # revocation may finish after it)
        self._revoked: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, presented: str) -> AuthenticatedUser | None:
        """The user ``presented`` was accepted for within ``seconds``; None otherwise."""
        if self.seconds <= 0:
            return None
        digest = _digest(presented)
        with self._lock:
            found = self._accepted.get(digest)
            if found is None:
                return None
            accepted_at, user = found
            if time.monotonic() - accepted_at > self.seconds:
                del self._accepted[digest]
                return None
            return user

    def put(self, presented: str, user: AuthenticatedUser) -> None:
        """Remember that ``presented`` was accepted for ``user`` now."""
        if self.seconds <= 0:
            return
        digest = _digest(presented)
        with self._lock:
            if user.key_id in self._revoked:
                return
            self._accepted[digest] = (time.monotonic(), user)
            self._accepted.move_to_end(digest)
            while len(self._accepted) > self.capacity:
                self._accepted.popitem(last=False)

    def forget(self, key_id: str) -> None:
        """Forget every entry of the key ``key_id`` (revoked), and never remember it again."""
        with self._lock:
            self._revoked[key_id] = None
            if len(self._revoked) > self.capacity:
                self._revoked.popitem(last=False)
            for digest in [d for d, (_, u) in self._accepted.items() if u.key_id == key_id]:
                del self._accepted[digest]


def _digest(presented: str) -> bytes:
    return hashlib.sha256(presented.encode()).digest()
