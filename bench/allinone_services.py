"""The all-in-one's services as a benchmark calls them: their URLs and the internal token."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import httpx

from gridweave_allinone.secrets import internal_token
from tests.support.allinone import AllInOneProcess

__all__ = ["AllInOneServices"]

#: Enough pooled connections for a benchmark's concurrent calls.
_LIMITS = httpx.Limits(max_connections=64, max_keepalive_connections=64)


@dataclass(frozen=True)
class AllInOneServices:
    """Some services of a running all-in-one (by name: ``credit``, ``metering``...)."""

    urls: Mapping[str, str]
    token: str

    @classmethod
    def of(cls, up: AllInOneProcess, *names: str) -> AllInOneServices:
        return cls({name: up.url(name) for name in names}, internal_token(up.state_dir))

    def headers(self, role: str) -> dict[str, str]:
        """An internal call's headers, declaring ``role``."""
        return {"Authorization": f"Bearer {self.token}", "X-Gridweave-Role": role}

    def client(self, service: str, role: str) -> httpx.Client:
        return httpx.Client(base_url=self.urls[service], headers=self.headers(role), timeout=60)

    def async_client(self, service: str, role: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.urls[service], headers=self.headers(role), timeout=120, limits=_LIMITS
        )
