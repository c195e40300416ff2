"""``python -m kuberay_service``: serve kuberay-service with uvicorn (port 8800 by default)."""

from __future__ import annotations

from gridweave_runtime.app import serve
from kuberay_service.app import create_app
from kuberay_service.settings import KubeRaySettings


def main() -> None:
    """Run kuberay-service until interrupted."""
    settings = KubeRaySettings()
    serve(create_app(settings), settings)


if __name__ == "__main__":
    main()
