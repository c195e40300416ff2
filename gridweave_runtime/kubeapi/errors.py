"""The one error of the local API launcher."""

from __future__ import annotations

__all__ = ["KubeAPIError"]


class KubeAPIError(RuntimeError):
    """The local Kubernetes API could not be had: binaries missing, start or setup failed."""
