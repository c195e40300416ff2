"""Registry tokens: ES256 JSON Web Tokens for the image registry, and the key that signs them.

The registry (``distribution``, ``auth.token``) sends a client without a token to
``GET /v1/registry/token``; the platform checks the user's API key, decides what the user
may do with each repository asked for (:mod:`platform_service.services.registry_access`),
and answers a JWT the registry verifies with the public key the platform publishes as a
JWK Set (``/v1/registry/jwks``; the key id is its RFC 7638 thumbprint).

The signing key is a P-256 key in a PEM file (``PLATFORM_REGISTRY_TOKEN_KEY_FILE``, by
default under the state directory), created with mode 0600 on first use, so tokens stay
valid across restarts and the registry's copy of the JWK Set never goes stale.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from gridweave_clients.platform.registry import TOKEN_ISSUER
from gridweave_controller.validation import REPOSITORY_PATTERN
from platform_service.settings import PlatformSettings

__all__ = ["TokenSigner", "load_token_signer", "publish_token", "token_key_path"]

_COORDINATE_BYTES = 32  # P-256


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def token_key_path(settings: PlatformSettings) -> Path:
    """Where the signing key is kept."""
    return settings.registry_token_key_file or settings.state_dir / "registry-token" / "key.pem"


def _load_or_create_key(path: Path) -> ec.EllipticCurvePrivateKey:
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        key = ec.generate_private_key(ec.SECP256R1())
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(pem)
        try:  # two processes starting at once: the first key written wins, both use it
            os.link(partial, path)
        except FileExistsError:
            pass
        finally:
            partial.unlink()
    loaded = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(loaded, ec.EllipticCurvePrivateKey) or loaded.curve.name != "secp256r1":
        raise ValueError(f"{path}: the registry token key must be a P-256 (ES256) private key")
    return loaded


@dataclass(frozen=True)
class TokenSigner:
    """Signs registry tokens with one P-256 key."""

    key: ec.EllipticCurvePrivateKey
    service: str
    lifetime_seconds: int

    def public_jwk(self) -> dict[str, str]:
        """The public key as a JWK, with its thumbprint as ``kid``."""
        numbers = self.key.public_key().public_numbers()
        x = _b64url(numbers.x.to_bytes(_COORDINATE_BYTES, "big"))
        y = _b64url(numbers.y.to_bytes(_COORDINATE_BYTES, "big"))
        # RFC 7638: the required members, in lexicographic order, no whitespace
        canonical = json.dumps({"crv": "P-256", "kty": "EC", "x": x, "y": y}, separators=(",", ":"))
        kid = _b64url(hashlib.sha256(canonical.encode()).digest())
        return {
            "kty": "EC",
            "crv": "P-256",
            "x": x,
            "y": y,
            "kid": kid,
            "use": "sig",
            "alg": "ES256",
        }

    def jwks(self) -> dict[str, list[dict[str, str]]]:
        """The JWK Set the registry verifies tokens with."""
        return {"keys": [self.public_jwk()]}

    def sign(self, *, subject: str, access: list[dict[str, Any]]) -> tuple[str, int, int]:
        """A token for ``subject`` granting ``access``: (token, issued at, lifetime)."""
        now = int(time.time())
        header = {"typ": "JWT", "alg": "ES256", "kid": self.public_jwk()["kid"]}
        claims = {
            "iss": TOKEN_ISSUER,
            "sub": subject,
            "aud": self.service,
            "iat": now,
            "nbf": now - 10,  # the registry's clock may be a little behind
            "exp": now + self.lifetime_seconds,
            "jti": secrets.token_urlsafe(16),
            "access": access,
        }
        signing_input = ".".join(
            _b64url(json.dumps(part, separators=(",", ":")).encode()) for part in (header, claims)
        )
        r, s = decode_dss_signature(
            self.key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256()))
        )
        signature = r.to_bytes(_COORDINATE_BYTES, "big") + s.to_bytes(_COORDINATE_BYTES, "big")
        return f"{signing_input}.{_b64url(signature)}", now, self.lifetime_seconds


def load_token_signer(settings: PlatformSettings) -> TokenSigner:
    """The signer of the settings' key (created when missing)."""
    return TokenSigner(
        key=_load_or_create_key(token_key_path(settings)),
        service=settings.registry_service,
        lifetime_seconds=settings.registry_token_seconds,
    )


def publish_token(settings: PlatformSettings, repository: str) -> str:
    """A token to push ``repository`` of the public namespace (Gridweave's own images);
    ``ValueError`` for any other repository."""
    namespace = settings.registry_public_namespace
    if not namespace or not re.fullmatch(REPOSITORY_PATTERN, repository):
        raise ValueError(f"{repository!r} is not a repository name")
    if repository.split("/", 1)[0] != namespace:
        raise ValueError(f"{repository} is not in the public namespace {namespace}/")
    access = [{"type": "repository", "name": repository, "actions": ["pull", "push"]}]
    token, _, _ = load_token_signer(settings).sign(subject=namespace, access=access)
    return token
