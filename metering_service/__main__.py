"""``python -m metering_service``: serve metering_service with uvicorn (port 8300 by default)."""

from __future__ import annotations

from gridweave_runtime.app import serve
from metering_service.app import create_app
from metering_service.settings import MeteringSettings


def main() -> None:
    """Run metering_service until interrupted."""
    settings = MeteringSettings()
    serve(create_app(settings), settings)


if __name__ == "__main__":
    main()
