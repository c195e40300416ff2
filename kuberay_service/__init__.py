"""kuberay-service (port 8800): the Gridweave CRDs over HTTP (``/v1/crd``) and node join."""

from __future__ import annotations

__all__: list[str] = []
