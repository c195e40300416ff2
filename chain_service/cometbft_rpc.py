"""The few CometBFT RPC calls the anchorer makes (URI form, over httpx)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import httpx

__all__ = ["CometRpc", "CometRpcError", "SentTx"]

_REFUSAL = re.compile(r"is invalid: code=(?P<code>\d+), data=.*?, log='(?P<log>[^']*)'")


class CometRpcError(RuntimeError):
    """The node could not be reached or answered with an error."""


@dataclass(frozen=True)
class SentTx:
    """What broadcast_tx_sync said: the CheckTx code and log (0: in the mempool)."""

    code: int
    log: str


class CometRpc:
    """A CometBFT node's RPC."""

    def __init__(self, base_url: str, *, timeout: float = 10.0) -> None:
        self._client = httpx.Client(base_url=base_url, timeout=timeout)

    def close(self) -> None:
        """Close the connections."""
        self._client.close()

    def _call(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        try:
            body = self._client.get(path, params=params).json()
        except (httpx.HTTPError, ValueError) as exc:
            raise CometRpcError(f"{path}: {exc}") from exc
        if "error" in body:
            raise CometRpcError(f"{path}: {body['error'].get('data') or body['error']}")
        result: dict[str, Any] = body["result"]
        return result

    def chain_id(self) -> str:
        """The node's chain id."""
        return str(self._call("/status", {})["node_info"]["network"])

    def broadcast(self, tx: bytes) -> SentTx:
        """Send ``tx`` to the mempool (CheckTx's answer); a tx in the cache is code 0."""
        try:
            result = self._call("/broadcast_tx_sync", {"tx": "0x" + tx.hex()})
        except CometRpcError as exc:
            if "tx already exists in cache" in str(exc):
                return SentTx(code=0, log="already in the mempool cache")
            # CometBFT v1 answers a CheckTx refusal as an RPC error naming code and log
            refused = _REFUSAL.search(str(exc))
            if refused is None:
                raise
            return SentTx(code=int(refused["code"]), log=refused["log"])
        return SentTx(code=int(result["code"]), log=str(result.get("log", "")))

    def find_tx(self, tx_hash: str) -> dict[str, Any] | None:
        """The committed tx with its inclusion proof, or None while it is not in a block."""
        try:
            return self._call("/tx", {"hash": "0x" + tx_hash.upper(), "prove": "true"})
        except CometRpcError as exc:
            if "not found" in str(exc):
                return None
            raise

    def signed_header(self, height: int) -> dict[str, Any]:
        """The header of block ``height`` and the commit that signed it."""
        result: dict[str, Any] = self._call("/commit", {"height": str(height)})["signed_header"]
        return result

    def validators(self, height: int) -> list[dict[str, Any]]:
        """The validator set of block ``height`` (up to 100 validators)."""
        result = self._call("/validators", {"height": str(height), "per_page": "100"})
        validators: list[dict[str, Any]] = result["validators"]
        return validators

    def query_batch(self, batch_id: int) -> dict[str, Any]:
        """The application's answer to ``/batch`` for ``batch_id`` (code, value, height)."""
        result = self._call(
            "/abci_query", {"path": '"/batch"', "data": "0x" + str(batch_id).encode().hex()}
        )
        response: dict[str, Any] = result["response"]
        return response
