"""``python -m faucet_service``: serve faucet_service with uvicorn (port 8500 by default)."""

from __future__ import annotations

from faucet_service.app import create_app
from faucet_service.settings import FaucetSettings
from gridweave_runtime.app import serve


def main() -> None:
    """Run faucet_service until interrupted."""
    settings = FaucetSettings()
    serve(create_app(settings), settings)


if __name__ == "__main__":
    main()
