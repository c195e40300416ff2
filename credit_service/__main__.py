"""``python -m credit_service``: serve credit_service with uvicorn (port 8400 by default)."""

from __future__ import annotations

from credit_service.app import create_app
from credit_service.settings import CreditSettings
from gridweave_runtime.app import serve


def main() -> None:
    """Run credit_service until interrupted."""
    settings = CreditSettings()
    serve(create_app(settings), settings)


if __name__ == "__main__":
    main()
