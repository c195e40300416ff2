"""chain_service's client, its wire models, and the verification anyone can run locally.

``verify`` (with ``encoding`` and ``merkle``) needs no server: the CLI checks a receipt's
hash, its chain links, its Merkle path and its batch signature with it.
"""

from __future__ import annotations

from gridweave_clients.chain.audit import audit_chain
from gridweave_clients.chain.client import AsyncChainClient, ChainClient
from gridweave_clients.chain.verify import (
    Step,
    StepResult,
    Verification,
    verify_anchor,
    verify_batch,
    verify_chain,
    verify_receipt,
)

__all__ = [
    "AsyncChainClient",
    "ChainClient",
    "Step",
    "StepResult",
    "Verification",
    "audit_chain",
    "verify_anchor",
    "verify_batch",
    "verify_chain",
    "verify_receipt",
]
