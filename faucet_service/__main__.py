"""``python -m faucet_service``: serve faucet_service with uvicorn (port 8500 by default)."""

from __future__ import annotations

import uvicorn

from faucet_service.app import create_app
from faucet_service.settings import FaucetSettings


def main() -> None:
    """Run faucet_service until interrupted."""
    settings = FaucetSettings()
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port)


if __name__ == "__main__":
    main()
