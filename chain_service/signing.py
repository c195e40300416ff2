"""chain_service's Ed25519 batch-signing key: loaded from its file, created when missing."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = ["SigningKey", "load_signing_key"]


@dataclass(frozen=True)
class SigningKey:
    """The private key and its raw public key in hex (what batches name)."""

    private_key: Ed25519PrivateKey
    public_key_hex: str

    def sign(self, message: bytes) -> str:
        """The Ed25519 signature of ``message``, hex."""
        return self.private_key.sign(message).hex()


def _public_hex(key: Ed25519PrivateKey) -> str:
    raw = key.public_key().public_bytes(
        encoding=serialization.Encoding.Raw, format=serialization.PublicFormat.Raw
    )
    return raw.hex()


def load_signing_key(path: Path) -> SigningKey:
    """The key in ``path`` (PEM, PKCS#8), a new one written there (0600) when it is missing.

    Raises:
        ValueError: the file holds something else than an unencrypted Ed25519 key.
    """
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        pem = Ed25519PrivateKey.generate().private_bytes(
            encoding=serialization.Encoding.PEM,
            format=serialization.PrivateFormat.PKCS8,
            encryption_algorithm=serialization.NoEncryption(),
        )
        # O_EXCL: two processes starting together keep one key, the second reads it
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(descriptor, "wb") as output:
                output.write(pem)
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError(f"{path} does not hold an Ed25519 private key")
    return SigningKey(private_key=key, public_key_hex=_public_hex(key))
