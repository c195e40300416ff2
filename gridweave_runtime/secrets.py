"""Secrets kept under ``<state_dir>/secrets``: made once, then read back on every start.

The directory is 0700 and each file 0600, both owned by the process that made them, so
only that user (and root) can read them. A secret is written whole (a new file renamed
over the old name), so a reader never sees half of one.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Mapping
from pathlib import Path

__all__ = ["kept_secret", "secrets_dir", "without_secrets"]

_SECRET_BYTES = 32
#: Parts of a variable's name that mark a secret, or a service's credentials, which a child
#: process that is not a service (a Ray worker, the registry's binary) must not inherit.
_SECRET_MARKS = (
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "DATABASE_URL",
    "PRIVATE_KEY",
    "SERVE_KEY",
    "CREDENTIALS",
)


def without_secrets(environment: Mapping[str, str], *, keep: str | None = None) -> dict[str, str]:
    """``environment`` less every variable whose name has ``TOKEN``, ``SECRET``, ``PASSWORD``,
    ``DATABASE_URL``, ``PRIVATE_KEY``, ``SERVE_KEY`` or ``CREDENTIALS`` in it, but those whose
    name starts with ``keep``."""
    return {
        name: value
        for name, value in environment.items()
        if (keep is not None and name.upper().startswith(keep))
        or not any(mark in name.upper() for mark in _SECRET_MARKS)
    }


def secrets_dir(state_dir: Path) -> Path:
    """``<state_dir>/secrets``, created readable by its owner only."""
    directory = state_dir / "secrets"
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    directory.chmod(0o700)
    return directory


def kept_secret(state_dir: Path, name: str) -> str:
    """The secret ``name`` of this state directory: read, or made (random) and written once.

    Two processes making the same secret at once would each keep their own: a caller that
    may race holds a lock of its own around this call.
    """
    path = secrets_dir(state_dir) / name
    try:
        value = path.read_text().strip()
    except FileNotFoundError:
        value = ""
    if value:
        return value
    value = secrets.token_urlsafe(_SECRET_BYTES)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=path.parent)  # mode 0600
    with os.fdopen(fd, "w") as out:
        out.write(value + "\n")
    Path(tmp).replace(path)
    return value
