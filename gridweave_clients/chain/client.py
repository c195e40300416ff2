"""The blocking and asyncio clients of chain_service."""

from __future__ import annotations

from gridweave_clients.base import AsyncInternalClient, InternalClient, awaiting, blocking
from gridweave_clients.chain import operations as ops

__all__ = ["AsyncChainClient", "ChainClient"]


class ChainClient(InternalClient):
    """chain_service (port 8600): receipts, the hash chain, Merkle batches and proofs."""

    service = "chain_service"

    record_receipt = blocking(ops.record_receipt)
    record_receipts = blocking(ops.record_receipts)
    list_subject_receipts = blocking(ops.list_subject_receipts)
    get_receipt_proof = blocking(ops.get_receipt_proof)
    list_chain = blocking(ops.list_chain)
    get_batch = blocking(ops.get_batch)
    seal_batch = blocking(ops.seal_batch)


class AsyncChainClient(AsyncInternalClient):
    """chain_service over asyncio: the methods of :class:`ChainClient`, awaited."""

    service = "chain_service"

    record_receipt = awaiting(ops.record_receipt)
    record_receipts = awaiting(ops.record_receipts)
    list_subject_receipts = awaiting(ops.list_subject_receipts)
    get_receipt_proof = awaiting(ops.get_receipt_proof)
    list_chain = awaiting(ops.list_chain)
    get_batch = awaiting(ops.get_batch)
    seal_batch = awaiting(ops.seal_batch)
