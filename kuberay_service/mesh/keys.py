"""WireGuard key pairs: Curve25519 (X25519) through ``cryptography``, base64 as ``wg`` writes.

``wg genkey`` / ``wg pubkey`` produce the same: a private key is 32 random bytes (clamped
by X25519 itself), the public key the X25519 base-point multiple, both base64 of 32 bytes.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
)

__all__ = ["KeyPair", "decode_key", "generate_key_pair", "public_key_of"]


@dataclass(frozen=True)
class KeyPair:
    """A WireGuard key pair, base64 (the private half never leaves its machine)."""

    private_key: str
    public_key: str

    def __repr__(self) -> str:  # never print the private key by accident
        return f"KeyPair(public_key={self.public_key!r})"


def decode_key(key: str) -> bytes:
    """The 32 bytes of a base64 WireGuard key; ValueError for anything else."""
    try:
        raw = base64.b64decode(key, validate=True)
    except binascii.Error as exc:
        raise ValueError("not a WireGuard key: not base64") from exc
    if len(raw) != 32:
        raise ValueError(f"not a WireGuard key: {len(raw)} bytes, not 32")
    return raw


def public_key_of(private_key: str) -> str:
    """The public key of a base64 private key (what ``wg pubkey`` prints)."""
    private = X25519PrivateKey.from_private_bytes(decode_key(private_key))
    raw = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return base64.b64encode(raw).decode()


def generate_key_pair() -> KeyPair:
    """A new key pair (``wg genkey`` and ``wg pubkey``)."""
    private = X25519PrivateKey.generate()
    raw = private.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
    private_key = base64.b64encode(raw).decode()
    return KeyPair(private_key=private_key, public_key=public_key_of(private_key))
