"""The job_gateway client (blocking and asyncio) and its wire models."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gridweave_clients.gateway.client import AsyncGatewayClient, GatewayClient

__all__ = ["AsyncGatewayClient", "GatewayClient"]

#: Imported on first use: a module of the package (its reasons, its models) loads alone.
_EXPORTS = {
    "AsyncGatewayClient": "gridweave_clients.gateway.client",
    "GatewayClient": "gridweave_clients.gateway.client",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
