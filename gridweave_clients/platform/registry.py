"""The image registry's wire models: quotas and usage, the registry's events, reconciliation.

Sizes are bytes. A quota written for people (``50GB``, ``500MiB``) is read by
:func:`parse_size`: ``KB``/``MB``/``GB``/``TB`` are powers of 1000, ``KiB``/``MiB``/``GiB``/
``TiB`` powers of 1024, as ``REGISTRY_QUOTA_GB`` counts in units of 10^9 bytes.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, Field

from gridweave_clients.fields import RequestBody
from gridweave_controller.validation import REPOSITORY_PATTERN

__all__ = [
    "DEFAULT_REGISTRY_SERVICE",
    "REPOSITORY_PATTERN",
    "Repository",
    "TOKEN_ISSUER",
    "RegistryBlob",
    "RegistryEvent",
    "RegistryEventTarget",
    "RegistryEventsRequest",
    "RegistryMaintenanceRequest",
    "RegistryShareListResponse",
    "RegistryShareResponse",
    "RegistryUsageListResponse",
    "RegistryUsageReport",
    "RegistryUsageResponse",
    "SetRegistryQuotaRequest",
    "UserId",
    "ShareRepositoryRequest",
    "PullTokenRequest",
    "PullTokenResponse",
    "format_size",
    "parse_size",
]

#: The ``service`` the registry names in its challenge, and the tokens' audience.
DEFAULT_REGISTRY_SERVICE = "gridweave-registry"
#: The ``iss`` of the platform's registry tokens; the registry trusts only this issuer.
TOKEN_ISSUER = "gridweave-platform"

Bytes = Annotated[int, Field(strict=True, ge=0, le=2**62)]
Digest = Annotated[str, Field(pattern=r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,128}$")]

Repository = Annotated[str, Field(min_length=3, max_length=255, pattern=REPOSITORY_PATTERN)]
UserId = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9._-]+$")]

_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_SIZE = re.compile(r"\s*(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>[a-zA-Z]*)\s*")


def parse_size(text: str) -> int:
    """Bytes in ``text`` (``50GB``, ``1.5GiB``, ``1000``); ValueError naming what is wrong."""
    match = _SIZE.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not a size: expected a number and a unit, e.g. 50GB")
    unit = match["unit"].lower()
    if unit not in _UNITS:
        raise ValueError(f"{text!r}: unknown unit {match['unit']!r} (B, KB, MB, GB, TB, GiB...)")
    return int(float(match["number"]) * _UNITS[unit])


def format_size(size: int) -> str:
    """``size`` bytes for people, in powers of 1000 (``1.20 GB``)."""
    for unit, factor in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if size >= factor:
            return f"{size / factor:.2f} {unit}"
    return f"{size} B"


class SetRegistryQuotaRequest(RequestBody):
    """A user's registry quota (admins only)."""

    quota_bytes: Bytes


class RegistryUsageResponse(BaseModel):
    """What a user's images take in the registry, and its quota."""

    user_id: str
    quota_bytes: int
    usage_bytes: int
    blobs: int
    quota_is_default: bool


class RegistryUsageListResponse(BaseModel):
    """A page of every user's registry usage and quota, most used first, and how many users."""

    users: list[RegistryUsageResponse]
    total: int


class RegistryEventTarget(BaseModel):
    """What an event is about (the fields Gridweave reads)."""

    repository: str = ""
    digest: str = ""
    size: int = Field(default=0, ge=0)
    mediaType: str = ""  # noqa: N815 (the registry's field name)


class RegistryEvent(BaseModel):
    """One registry notification event (push, mount, pull, delete)."""

    action: str
    target: RegistryEventTarget = Field(default_factory=RegistryEventTarget)


class RegistryEventsRequest(BaseModel):
    """The envelope the registry posts its events in."""

    events: list[RegistryEvent] = Field(default_factory=list, max_length=10_000)


class RegistryBlob(BaseModel):
    """One blob of one namespace, as found in the registry's storage."""

    namespace: str = Field(min_length=1, max_length=128)
    digest: Digest
    size_bytes: Bytes


class RegistryUsageReport(RequestBody):
    """Every blob the registry's storage holds, per namespace: replaces the counted usage."""

    blobs: list[RegistryBlob] = Field(max_length=1_000_000)


class RegistryMaintenanceRequest(RequestBody):
    """The registry enters (for at most ``seconds``) or leaves its read-only collection."""

    read_only: bool
    seconds: int = Field(default=3600, ge=1, le=86_400)


class ShareRepositoryRequest(RequestBody):
    """Let another user pull one of the caller's repositories."""

    repository: Repository
    user_id: UserId


class RegistryShareResponse(BaseModel):
    """A repository another user may pull."""

    repository: str
    user_id: str
    created_at: datetime


class RegistryShareListResponse(BaseModel):
    """The caller's shares: those it granted, and those granted to it."""

    granted: list[RegistryShareResponse]
    received: list[RegistryShareResponse]


class PullTokenRequest(RequestBody):
    """A node's pull of a job's image, with the rights of the job's owner."""

    user_id: UserId
    repository: Repository


class PullTokenResponse(BaseModel):
    """A registry token granting ``user_id`` pull on the repository, for ``expires_in`` s."""

    token: str
    expires_in: int
