"""``python -m chain_service``: serve chain_service with uvicorn (port 8600 by default)."""

from __future__ import annotations

from chain_service.app import create_app
from chain_service.settings import ChainSettings
from gridweave_runtime.app import serve


def main() -> None:
    """Run chain_service until interrupted."""
    settings = ChainSettings()
    serve(create_app(settings), settings)


if __name__ == "__main__":
    main()
