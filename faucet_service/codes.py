"""Verification codes: six random digits, stored only as an HMAC-SHA256 (pure, no I/O)."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from faucet_service.settings import FaucetSettings

__all__ = ["code_matches", "code_secret", "hash_code", "new_code"]

CODE_DIGITS = 6


def new_code() -> str:
    """A fresh code of six digits from the system's secure random source."""
    return f"{secrets.randbelow(10**CODE_DIGITS):0{CODE_DIGITS}d}"


def code_secret(settings: FaucetSettings) -> bytes:
    """The HMAC key: FAUCET_CODE_SECRET, else one derived from the faucet's own token."""
    if settings.code_secret is not None and settings.code_secret.get_secret_value():
        return settings.code_secret.get_secret_value().encode()
    token = settings.own_token().encode()
    return hmac.new(token, b"gridweave faucet verification codes", hashlib.sha256).digest()


def hash_code(secret: bytes, *, email: str, code: str) -> str:
    """The stored form of ``code`` for ``email`` (the email is in the MAC: no reuse across)."""
    return hmac.new(secret, f"{email}\x00{code}".encode(), hashlib.sha256).hexdigest()


def code_matches(secret: bytes, *, email: str, code: str, stored_hash: str) -> bool:
    """Whether ``code`` is the one stored for ``email`` (constant-time comparison)."""
    return hmac.compare_digest(hash_code(secret, email=email, code=code), stored_hash)
