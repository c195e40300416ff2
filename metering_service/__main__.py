"""``python -m metering_service``: serve metering_service with uvicorn (port 8300 by default)."""

from __future__ import annotations

import uvicorn

from metering_service.app import create_app
from metering_service.settings import MeteringSettings


def main() -> None:
    """Run metering_service until interrupted."""
    settings = MeteringSettings()
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port)


if __name__ == "__main__":
    main()
