"""``python -m credit_service``: serve credit_service with uvicorn (port 8400 by default)."""

from __future__ import annotations

import uvicorn

from credit_service.app import create_app
from credit_service.settings import CreditSettings


def main() -> None:
    """Run credit_service until interrupted."""
    settings = CreditSettings()
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port)


if __name__ == "__main__":
    main()
