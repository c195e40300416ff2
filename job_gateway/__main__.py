"""``python -m job_gateway``: serve job_gateway with uvicorn (port 8200 by default)."""

from __future__ import annotations

from gridweave_runtime.app import serve
from job_gateway.app import create_app
from job_gateway.settings import GatewaySettings


def main() -> None:
    """Run job_gateway until interrupted."""
    settings = GatewaySettings()
    serve(create_app(settings), settings)


if __name__ == "__main__":
    main()
