"""Per-service credentials: each service has a token of its own, and the roles it may act as
are bound to that token, not declared by the caller.

Every service is given two settings:

- ``GRIDWEAVE_SERVICE_TOKEN``: its own secret, sent on every internal call it makes;
- ``GRIDWEAVE_CREDENTIALS``: the deployment's credentials document, which every service
  checks incoming calls against. It holds no secret: only each token's SHA-256, the name of
  the service it was made for, and the roles that token may act as (the first is its own,
  what a call that names none is recorded as). It is given inline (JSON) or as the path of a
  file.

So a compromised service can act only as itself: the metering service's token cannot grant
credits, the gateway's cannot capture a hold. Who may act as whom, and why, is written in
one place, ``gridweave_runtime.service_roster``, which also makes a deployment's set
(``gridweave up`` and ``deploy.sh``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gridweave_runtime.service_roster import token_digest

__all__ = ["Credential", "Credentials", "load_credentials"]

#: A role reads as a service's name and fits the ledger's operations.caller (VARCHAR(64)).
_Role = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._-]{0,63}$")]


@dataclass(frozen=True, slots=True)
class Credential:
    """One service's credential: its name and the roles it may act as (the first its own)."""

    name: str
    roles: tuple[str, ...]


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9._-]*$")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    roles: tuple[_Role, ...] = Field(min_length=1, max_length=16)

    def credential(self) -> Credential:
        return Credential(self.name, self.roles)


class _Document(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    credentials: tuple[_Entry, ...] = Field(min_length=1, max_length=1_000)


class Credentials:
    """The credentials a service accepts, by their token's SHA-256."""

    def __init__(self, by_digest: Mapping[str, Credential]) -> None:
        if not by_digest:
            raise ValueError("a service must accept at least one credential")
        self._by_digest = dict(by_digest)

    def match(self, presented: bytes) -> Credential | None:
        """The credential of the token ``presented``; None for any other.

        Looked up by the token's SHA-256: what a lookup's timing could tell is about the
        digest, which says nothing about the token.
        """
        return self._by_digest.get(token_digest(presented))

    def __len__(self) -> int:
        return len(self._by_digest)


def _document_text(source: str) -> str:
    text = source.strip()
    if text.startswith("{"):
        return text
    try:
        return Path(text).read_text()
    except OSError as exc:
        raise ValueError(f"GRIDWEAVE_CREDENTIALS: cannot read {text!r}: {exc}") from None


def load_credentials(source: str) -> Credentials:
    """The credentials of ``source``: the document inline (JSON), or the path of its file.

    Raises:
        ValueError: the file cannot be read, or the document names a field wrong
        (the message names it).
    """
    try:
        document = _Document.model_validate_json(_document_text(source))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "document"
        raise ValueError(f"GRIDWEAVE_CREDENTIALS: {where}: {first['msg']}") from None
    by_digest: dict[str, Credential] = {}
    for index, entry in enumerate(document.credentials):
        if entry.sha256 in by_digest:
            raise ValueError(
                f"GRIDWEAVE_CREDENTIALS: credentials.{index}.sha256: the token of "
                f"{by_digest[entry.sha256].name!r} again"
            )
        by_digest[entry.sha256] = entry.credential()
    return Credentials(by_digest)
