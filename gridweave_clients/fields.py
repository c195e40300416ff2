"""Field types and the request base shared by the wire models of every service."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PrintableId", "RequestBody", "UserId"]

UserId = Annotated[
    str,
    Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._@:+-]*$"),
]
# Printable ASCII without spaces: no NUL or other control character ever reaches PostgreSQL.
PrintableId = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[\x21-\x7e]+$")]


class RequestBody(BaseModel):
    """Base of request bodies: unknown fields are refused, so a typo is a 422, not ignored."""

    model_config = ConfigDict(extra="forbid")
