"""``python -m chain_service``: serve chain_service with uvicorn (port 8600 by default)."""

from __future__ import annotations

from chain_service.app import create_app
from chain_service.settings import ChainSettings
from gridweave_runtime.app import serve
from gridweave_runtime.priority import lower_priority


def main() -> None:
    """Run chain_service until interrupted."""
    settings = ChainSettings()
    app = create_app(settings)  # the embedded PostgreSQL, if it starts it, at its own priority
    lower_priority(settings.niceness)
    serve(app, settings)


if __name__ == "__main__":
    main()
