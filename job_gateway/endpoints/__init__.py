"""Model endpoints on Ray Serve: the reconciler (gateway side) and the replica (Serve side).

The gateway imports :class:`EndpointReconciler` and :class:`EndpointSettings`; the replica
modules (``replica`` and its backends) run inside Serve's replica processes.
"""

from __future__ import annotations

from job_gateway.endpoints.reconciler import EndpointReconciler
from job_gateway.endpoints.settings import EndpointSettings

__all__ = ["EndpointReconciler", "EndpointSettings"]
