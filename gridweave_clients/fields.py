"""Field types and the request base shared by the wire models of every service."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

__all__ = [
    "EARLIEST_INSTANT",
    "LATEST_INSTANT",
    "MAX_BIGINT",
    "MAX_UNKNOWN_FIELDS",
    "MAX_REPLICAS",
    "DatabaseId",
    "EndpointId",
    "PrintableId",
    "RequestBody",
    "UserId",
    "UtcDatetime",
]

UserId = Annotated[
    str,
    Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._@:+-]*$"),
]
EndpointId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=63,
        pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        description="A DNS-1123 label: the GridweaveEndpoint's name.",
    ),
]
#: The most replicas one endpoint scales to.
MAX_REPLICAS = 64
# Printable ASCII without spaces: no NUL or other control character ever reaches PostgreSQL.
PrintableId = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[\x21-\x7e]+$")]

#: PostgreSQL's largest BIGINT: every integer that reaches a BIGINT column is at most this.
MAX_BIGINT = 2**63 - 1
#: A row id (a BIGINT identity column), in a path or a query: 1 ..= 2^63 - 1.
DatabaseId = Annotated[int, Field(ge=1, le=MAX_BIGINT, description="A row id (1 ..= 2^63 - 1).")]


#: The instants a timestamp column takes. PostgreSQL keeps years 4713 BC to 294276 AD, but
#: what it hands back must fit Python's datetime (years 1 to 9999) in the session's time
#: zone, hence a day's margin at each end.
EARLIEST_INSTANT = datetime(1, 1, 2, tzinfo=UTC)
LATEST_INSTANT = datetime(9999, 12, 30, 23, 59, 59, 999_999, tzinfo=UTC)


def _to_utc(value: datetime) -> datetime:
    # "0001-01-01T00:00:00+23:59" is a year-0 instant: stored fine and unreadable ever after.
    # So the instant is checked, not the text.
    try:
        instant = value.astimezone(UTC)
    except OverflowError:
        instant = None
    if instant is None or not EARLIEST_INSTANT <= instant <= LATEST_INSTANT:
        raise PydanticCustomError(
            "datetime_out_of_range", "must be between 0001-01-02 and 9999-12-30 in UTC"
        )
    return instant


#: A timezone-aware instant, converted to UTC; refused when UTC takes it out of years 1-9999.
UtcDatetime = Annotated[AwareDatetime, AfterValidator(_to_utc)]

#: More unknown fields than this in one body: refused as one error, before each is checked.
MAX_UNKNOWN_FIELDS = 20


class RequestBody(BaseModel):
    """Base of request bodies: unknown fields are refused, so a typo is a 422, not ignored.

    A body with more than ``MAX_UNKNOWN_FIELDS`` unknown fields is refused at once with one
    error (how many, and a few of them): the work and the answer never grow with the input.
    """

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _refuse_many_unknown_fields(cls, data: Any) -> Any:
        if not isinstance(data, dict) or len(data) <= len(cls.model_fields) + MAX_UNKNOWN_FIELDS:
            return data  # each unknown field is named by its own error
        unknown = [name for name in data if name not in cls.model_fields]
        examples = ", ".join(str(name)[:40] for name in unknown[:3])
        raise PydanticCustomError(
            "too_many_unknown_fields",
            "{count} unknown fields (at most {limit} are named), e.g. {examples}",
            {"count": len(unknown), "limit": MAX_UNKNOWN_FIELDS, "examples": examples},
        )
