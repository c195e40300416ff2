"""``python -m kuberay_service``: serve kuberay-service with uvicorn (port 8800 by default)."""

from __future__ import annotations

import uvicorn

from kuberay_service.app import create_app
from kuberay_service.settings import KubeRaySettings


def main() -> None:
    """Run kuberay-service until interrupted."""
    settings = KubeRaySettings()
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port)


if __name__ == "__main__":
    main()
