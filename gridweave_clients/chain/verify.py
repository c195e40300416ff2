"""Verifying receipts, the hash chain and batches locally: what failed, step by step.

Runs anywhere the SDK runs (hashlib, and ``cryptography`` for Ed25519 signatures). The
steps, in the order they are checked:

- ``receipt_hash``: the receipt's hash recomputed from its fields, seq and prev_hash.
- ``chain_link``: consecutive receipts: seq goes up by one and prev_hash is the hash before.
- ``merkle_inclusion``: the receipt's leaf, its index and its path lead to the batch root.
- ``batch_root``: a batch's root recomputed from all its receipts, and its last_hash.
- ``batch_signature``: chain_service's Ed25519 signature over the batch message (against
  the key the verifier trusts, or the key the batch names when none is given).
- Once the batch is anchored in CometBFT (``gridweave_clients.chain.cometbft``):
  ``anchor_tx`` (the committed transaction is the batch's anchor and has the recorded
  hash), ``tx_inclusion`` (its proof leads to the block's data hash), ``block_commit`` (the
  header hashes to the block id the commit signed, at the anchor's height and chain) and
  ``commit_signatures`` (the validator set matches the header, or the trusted set, and
  more than two thirds of its power signed).

A report lists every step it ran with the reason of each failure; ``first_failure`` names
the step that broke first.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gridweave_clients.chain.cometbft import commit_power, header_hash, tx_root, validator_set_hash
from gridweave_clients.chain.encoding import (
    GENESIS_HASH,
    batch_anchor_tx,
    batch_message,
    receipt_hash,
)
from gridweave_clients.chain.merkle import merkle_root, root_from_path
from gridweave_clients.chain.models import (
    BatchResponse,
    ReceiptProofResponse,
    ReceiptResponse,
    receipt_fields,
)

__all__ = [
    "Step",
    "StepResult",
    "Verification",
    "verify_anchor",
    "verify_batch",
    "verify_chain",
    "verify_receipt",
]


class Step(StrEnum):
    """A verification step (see the module docstring)."""

    RECEIPT_HASH = "receipt_hash"
    CHAIN_LINK = "chain_link"
    MERKLE_INCLUSION = "merkle_inclusion"
    BATCH_ROOT = "batch_root"
    BATCH_SIGNATURE = "batch_signature"
    ANCHOR_TX = "anchor_tx"
    TX_INCLUSION = "tx_inclusion"
    BLOCK_COMMIT = "block_commit"
    COMMIT_SIGNATURES = "commit_signatures"


@dataclass(frozen=True)
class StepResult:
    """One step's outcome; ``detail`` says what was compared, or why it failed."""

    step: Step
    ok: bool
    detail: str


@dataclass(frozen=True)
class Verification:
    """Every step run, in order."""

    steps: tuple[StepResult, ...]

    @property
    def ok(self) -> bool:
        """Whether every step passed (and at least one ran)."""
        return bool(self.steps) and all(result.ok for result in self.steps)

    @property
    def first_failure(self) -> StepResult | None:
        """The first step that failed, or None."""
        return next((result for result in self.steps if not result.ok), None)

    @property
    def failed_steps(self) -> set[Step]:
        """The steps that failed."""
        return {result.step for result in self.steps if not result.ok}


def _check_hash(receipt: ReceiptResponse) -> StepResult:
    expected = receipt_hash(receipt_fields(receipt), seq=receipt.seq, prev_hash=receipt.prev_hash)
    if expected == receipt.hash:
        return StepResult(Step.RECEIPT_HASH, True, f"receipt {receipt.seq}: hash {expected}")
    return StepResult(
        Step.RECEIPT_HASH,
        False,
        f"receipt {receipt.seq}: its fields hash to {expected}, it claims {receipt.hash}",
    )


def _check_link(before: ReceiptResponse | None, receipt: ReceiptResponse) -> StepResult:
    expected_seq = 1 if before is None else before.seq + 1
    expected_prev = GENESIS_HASH if before is None else before.hash
    if receipt.seq != expected_seq:
        return StepResult(
            Step.CHAIN_LINK, False, f"receipt {receipt.seq} comes after receipt {expected_seq - 1}"
        )
    if receipt.prev_hash != expected_prev:
        return StepResult(
            Step.CHAIN_LINK,
            False,
            f"receipt {receipt.seq}: prev_hash {receipt.prev_hash}, the receipt before hashes "
            f"to {expected_prev}",
        )
    return StepResult(Step.CHAIN_LINK, True, f"receipt {receipt.seq} follows {expected_seq - 1}")


def _check_signature(batch: BatchResponse, trusted_public_key: str | None) -> StepResult:
    # imported here: the hash and Merkle steps need nothing beyond the standard library
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    key_hex = trusted_public_key or batch.public_key
    if trusted_public_key is not None and batch.public_key != trusted_public_key:
        return StepResult(
            Step.BATCH_SIGNATURE, False, f"batch {batch.batch_id} names another signing key"
        )
    message = batch_message(
        batch_id=batch.batch_id,
        first_seq=batch.first_seq,
        last_seq=batch.last_seq,
        root=batch.root,
        last_hash=batch.last_hash,
    )
    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(key_hex)).verify(
            bytes.fromhex(batch.signature), message
        )
    except (ValueError, InvalidSignature):
        return StepResult(
            Step.BATCH_SIGNATURE, False, f"batch {batch.batch_id}: signature does not verify"
        )
    return StepResult(Step.BATCH_SIGNATURE, True, f"batch {batch.batch_id}: signed by {key_hex}")


def verify_receipt(
    proof: ReceiptProofResponse,
    *,
    trusted_public_key: str | None = None,
    trusted_validators: Sequence[Mapping[str, Any]] | None = None,
) -> Verification:
    """Check one receipt: its hash, its Merkle path to its batch's root, the batch signature,
    and the batch's anchor in CometBFT when it has one.

    A receipt not batched yet gets only its hash checked.
    """
    receipt = proof.receipt
    steps = [_check_hash(receipt)]
    batch = proof.batch
    if batch is None or proof.leaf_index is None:
        return Verification(tuple(steps))
    root = root_from_path(
        bytes.fromhex(receipt.hash),
        proof.leaf_index,
        batch.leaf_count,
        [bytes.fromhex(sibling) for sibling in proof.merkle_path],
    )
    in_range = batch.first_seq <= receipt.seq <= batch.last_seq
    if root is not None and in_range and root.hex() == batch.root:
        steps.append(
            StepResult(Step.MERKLE_INCLUSION, True, f"leaf {proof.leaf_index} -> {batch.root}")
        )
    else:
        led_to = "no root" if root is None else root.hex()
        steps.append(
            StepResult(
                Step.MERKLE_INCLUSION,
                False,
                f"receipt {receipt.seq}: its path leads to {led_to}, batch {batch.batch_id} "
                f"has root {batch.root}",
            )
        )
    steps.append(_check_signature(batch, trusted_public_key))
    if batch.anchor is not None:
        steps.extend(verify_anchor(batch, trusted_validators=trusted_validators).steps)
    return Verification(tuple(steps))


def _failed(step: Step, detail: str) -> Verification:
    return Verification((StepResult(step, False, detail),))


def verify_anchor(
    batch: BatchResponse, *, trusted_validators: Sequence[Mapping[str, Any]] | None = None
) -> Verification:
    """Check a batch's CometBFT anchor offline: transaction, inclusion, block, commit."""
    anchor = batch.anchor
    if anchor is None:
        return _failed(Step.ANCHOR_TX, f"batch {batch.batch_id} is not anchored")
    try:
        tx_proof = anchor.proof["tx"]["proof"]
        signed_header = anchor.proof["signed_header"]
        validators = anchor.proof["validators"]
        tx = base64.b64decode(tx_proof["data"])
        header, commit = signed_header["header"], signed_header["commit"]
        root = tx_root(tx, tx_proof["proof"])
        block = header_hash(header).hex().upper()
    except (KeyError, TypeError, ValueError):
        return _failed(Step.ANCHOR_TX, f"batch {batch.batch_id}: the anchor proof is incomplete")
    steps: list[StepResult] = []
    expected_tx = batch_anchor_tx(batch)
    tx_ok = tx == expected_tx and hashlib.sha256(tx).hexdigest() == anchor.tx_hash
    steps.append(
        StepResult(
            Step.ANCHOR_TX,
            tx_ok,
            f"transaction {anchor.tx_hash}"
            + ("" if tx_ok else ": not this batch's anchor, or not that hash"),
        )
    )
    data_hash = str(header.get("data_hash", "")).lower()
    included = root is not None and root.hex() == data_hash
    steps.append(
        StepResult(
            Step.TX_INCLUSION,
            included,
            f"data hash {data_hash}"
            + ("" if included else f", the proof leads to {root.hex() if root else 'nothing'}"),
        )
    )
    problems = []
    if block != str(commit["block_id"]["hash"]).upper():
        problems.append(f"header hashes to {block}, the commit signed {commit['block_id']['hash']}")
    if int(header["height"]) != anchor.height or int(commit["height"]) != anchor.height:
        problems.append(f"block {header['height']}, the anchor says {anchor.height}")
    if header["chain_id"] != anchor.chain_id:
        problems.append(f"chain {header['chain_id']}, the anchor says {anchor.chain_id}")
    steps.append(
        StepResult(
            Step.BLOCK_COMMIT,
            not problems,
            "; ".join(problems) or f"block {block} at height {anchor.height}",
        )
    )
    steps.append(_check_commit(signed_header, validators, trusted_validators))
    return Verification(tuple(steps))


def _check_commit(
    signed_header: Mapping[str, Any],
    validators: Sequence[Mapping[str, Any]],
    trusted: Sequence[Mapping[str, Any]] | None,
) -> StepResult:
    try:
        if trusted is not None and validator_set_hash(trusted) != validator_set_hash(validators):
            return StepResult(
                Step.COMMIT_SIGNATURES, False, "the validators are not the trusted set"
            )
        set_hash = validator_set_hash(validators).hex().upper()
        if set_hash != str(signed_header["header"]["validators_hash"]).upper():
            return StepResult(
                Step.COMMIT_SIGNATURES, False, "the validators are not the block's validator set"
            )
        signed, total = commit_power(signed_header, validators)
    except (KeyError, TypeError, ValueError) as exc:
        return StepResult(Step.COMMIT_SIGNATURES, False, f"malformed commit: {exc}")
    ok = total > 0 and 3 * signed > 2 * total
    return StepResult(
        Step.COMMIT_SIGNATURES,
        ok,
        f"{signed} of {total} voting power signed" + ("" if ok else " (needs more than 2/3)"),
    )


def verify_chain(
    receipts: Sequence[ReceiptResponse], *, before: ReceiptResponse | None = None
) -> Verification:
    """Check consecutive receipts: each hash, and each link (from genesis without ``before``)."""
    steps: list[StepResult] = []
    previous = before
    for receipt in receipts:
        steps.append(_check_hash(receipt))
        steps.append(_check_link(previous, receipt))
        previous = receipt
    return Verification(tuple(steps))


def verify_batch(
    batch: BatchResponse,
    receipts: Sequence[ReceiptResponse],
    *,
    trusted_public_key: str | None = None,
) -> Verification:
    """Check a batch against all its receipts: hashes, links, root, last hash, signature."""
    steps = [result for result in verify_chain(receipts).steps if result.step != Step.CHAIN_LINK]
    for previous, receipt in zip(receipts, receipts[1:], strict=False):
        steps.append(_check_link(previous, receipt))
    seqs = [receipt.seq for receipt in receipts]
    expected = list(range(batch.first_seq, batch.last_seq + 1))
    if not receipts:
        steps.append(StepResult(Step.BATCH_ROOT, False, f"batch {batch.batch_id}: no receipts"))
    else:
        root = merkle_root([bytes.fromhex(receipt.hash) for receipt in receipts]).hex()
        problems = []
        if seqs != expected:
            problems.append(
                f"receipts {seqs[0]}..{seqs[-1]} ({len(seqs)}), batch covers "
                f"{batch.first_seq}..{batch.last_seq}"
            )
        if root != batch.root:
            problems.append(f"receipts hash to root {root}, batch has {batch.root}")
        if receipts[-1].hash != batch.last_hash:
            problems.append(f"last receipt hash {receipts[-1].hash}, batch has {batch.last_hash}")
        detail = "; ".join(problems) or f"batch {batch.batch_id}: root {root}"
        steps.append(StepResult(Step.BATCH_ROOT, not problems, detail))
    steps.append(_check_signature(batch, trusted_public_key))
    return Verification(tuple(steps))
