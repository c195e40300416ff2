"""Field types shared by the faucet's bodies."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

__all__ = ["Email", "normalize_email"]

_EMAIL_PATTERN = (
    r"^[a-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}"
    r"@[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$"
)


def normalize_email(value: Any) -> Any:
    """Trim and lower-case an email, so one mailbox is one key everywhere."""
    return value.strip().lower() if isinstance(value, str) else value


Email = Annotated[
    str,
    BeforeValidator(normalize_email),
    Field(max_length=254, pattern=_EMAIL_PATTERN, description="An email address."),
]
