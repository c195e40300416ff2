"""Join keys and node tokens: random secrets shown once, stored as a SHA-256.

A secret is 32 random bytes (URL-safe base64) behind a readable prefix, so a plain hash is
enough: nobody can guess one, and the hash only has to find the row.
"""

from __future__ import annotations

import hashlib
import secrets

__all__ = ["hash_secret", "new_secret"]


def new_secret(prefix: str) -> tuple[str, str]:
    """A new secret ``<prefix>_<random>`` and its hash (store the hash, show the secret)."""
    secret = f"{prefix}_{secrets.token_urlsafe(32)}"
    return secret, hash_secret(secret)


def hash_secret(secret: str) -> str:
    """The stored form of ``secret`` (hex SHA-256)."""
    return hashlib.sha256(secret.encode()).hexdigest()
