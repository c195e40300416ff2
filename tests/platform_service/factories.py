"""The platform under test and its defaults, in one place.

The platform is served on a loopback port like every service; the services it calls are
the real ones (credit, metering, faucet on PostgreSQL; the gateway on the real apiserver),
each on its own port, all sharing the tests' internal token.
"""

from __future__ import annotations

import base64
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from gridweave_runtime.storage import LocalObjectStore
from platform_service.app import create_app
from platform_service.services.bootstrap import create_admin_key
from platform_service.services.keys import api_key_secret
from platform_service.settings import PlatformSettings
from tests.support.credentials import service_auth
from tests.support.credit_server import INTERNAL_TOKEN
from tests.support.http_server import serve_in_thread

#: Where nothing listens: a service the test does not need.
NOWHERE = "http://127.0.0.1:9"
#: The largest submission the whole stack's platform takes (small: the 413 is tested).
MAX_SUBMISSION = 200_000


def platform_settings(database_url: str, state_dir: Path, **overrides: Any) -> PlatformSettings:
    """Settings for a platform on ``database_url``; services unreachable unless given."""
    values: dict[str, Any] = {
        "database_url": database_url,
        **service_auth(INTERNAL_TOKEN),
        "state_dir": state_dir,
        "credit_service_url": NOWHERE,
        "gateway_url": NOWHERE,
        "metering_service_url": NOWHERE,
        "faucet_service_url": NOWHERE,
        "chain_service_url": NOWHERE,
        "credit_attempts": 1,
        "downstream_timeout_seconds": 20.0,
        # the route tests' /models/..., and the models tests build under the temp folder
        "model_roots": ["/models", tempfile.gettempdir()],
        **overrides,
    }
    return PlatformSettings(**values)


def bearer(key: str) -> dict[str, str]:
    """The header carrying an API key."""
    return {"Authorization": f"Bearer {key}"}


def pickled(text: str) -> str:
    """Opaque bytes standing for a pickle, base64-encoded as the SDK sends them."""
    return base64.b64encode(f"\x80\x05pickle:{text}".encode()).decode()


def submit_body(**overrides: Any) -> dict[str, Any]:
    """A valid submission: 8 GiB on one AMD GPU for a minute (it waits: the node is NotReady)."""
    return {
        "function": pickled("fn"),
        "args": pickled("args"),
        "vram_mb": 8192,
        "vendor": "amd",
        "timeout_seconds": 60,
        **overrides,
    }


def map_body(**overrides: Any) -> dict[str, Any]:
    """A valid map: ten inputs in five chunks of two, on up to three workers of one AMD GPU
    each (they wait: the node is NotReady)."""
    chunk = base64.b64encode(b"\x80\x05opaque chunk").decode()
    return {
        "function": pickled("fn"),
        "chunks": [chunk] * 5,
        "items": 10,
        "chunk_items": 2,
        "concurrency": 3,
        "vram_mb": 8192,
        "vendor": "amd",
        "timeout_seconds": 60,
        **overrides,
    }


@dataclass(frozen=True)
class User:
    """A platform user and its key."""

    user_id: str
    key: str

    @property
    def headers(self) -> dict[str, str]:
        """Its ``Authorization`` header."""
        return bearer(self.key)


@dataclass(frozen=True)
class PlatformServer:
    """A running platform: its URL, a client without credentials, its first admin."""

    url: str
    http: httpx.Client
    admin: User
    storage_dir: Path

    def new_user(self, *, role: str = "user") -> User:
        """A fresh user (made by the admin) and its first key."""
        email = f"user-{uuid.uuid4().hex[:10]}@example.com"
        response = self.http.post(
            "/v1/users", json={"email": email, "role": role}, headers=self.admin.headers
        )
        assert response.status_code == 201, response.text
        body = response.json()
        return User(body["user"]["user_id"], body["api_key"]["api_key"])


@contextmanager
def running_platform(
    settings: PlatformSettings, *, store: LocalObjectStore | None = None, port: int | None = None
) -> Iterator[PlatformServer]:
    """The platform on a loopback port (``port``, else a free one; database migrated) with
    a bootstrapped admin; its object store the settings' directory unless ``store`` is
    given."""
    storage_dir = settings.storage_dir or settings.state_dir / "objects"
    app = create_app(settings, store=store or LocalObjectStore(storage_dir))
    try:
        with app.state.database.session() as session:
            admin_key = create_admin_key(
                session,
                hmac_key=api_key_secret(settings),
                email=f"admin-{uuid.uuid4().hex[:8]}@example.com",
                key_name="tests",
            )
        with (
            serve_in_thread(app, settings, port=port) as url,
            httpx.Client(base_url=url, timeout=60) as http,
        ):
            me = http.get("/v1/me", headers=bearer(admin_key.api_key)).json()
            admin = User(me["user_id"], admin_key.api_key)
            yield PlatformServer(url, http, admin, storage_dir)
    finally:
        app.state.database.dispose()


__all__ = [
    "MAX_SUBMISSION",
    "NOWHERE",
    "PlatformServer",
    "User",
    "bearer",
    "map_body",
    "pickled",
    "platform_settings",
    "running_platform",
    "submit_body",
]
