"""The key of Ray Serve's HTTP proxy: only the platform (and the gateway's probe) call
endpoints there.

Serve's proxy has no auth of its own, and every process on the head node (a job's too)
can reach it. So every request to an endpoint's replica must carry ``X-Gridweave-Serve-Key``,
a key derived from ``GRIDWEAVE_SERVE_KEY`` (a secret only the platform and the gateway
hold); a replica answers anything else 401. The
replica itself is given only the key's SHA-256 (its configuration travels through Ray,
which a job's process can read), and it removes the header before the user's code sees the
request. See docs/architecture.md, security notes.
"""

from __future__ import annotations

import hashlib
import hmac

__all__ = ["SERVE_KEY_HEADER", "serve_key", "serve_key_digest", "serve_key_matches"]

#: The header that carries the key (lower case: as ASGI scopes spell header names).
SERVE_KEY_HEADER = "x-gridweave-serve-key"
_PURPOSE = b"gridweave serve proxy key v1"


def serve_key(secret: str) -> str:
    """The cluster's Serve key, derived from ``GRIDWEAVE_SERVE_KEY`` (HMAC-SHA256, hex)."""
    return hmac.new(secret.encode(), _PURPOSE, hashlib.sha256).hexdigest()


def serve_key_digest(key: str) -> str:
    """What a replica is given to check the key by: its SHA-256 (hex)."""
    return hashlib.sha256(key.encode()).hexdigest()


def serve_key_matches(presented: str | None, digest: str) -> bool:
    """Whether ``presented`` is the key of ``digest`` (constant time); None never is."""
    if not presented or not digest:
        return False
    return hmac.compare_digest(serve_key_digest(presented), digest)
