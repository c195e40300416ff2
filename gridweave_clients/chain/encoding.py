"""The one encoding of receipts and batches, and their hashes (server and verifier alike).

Canonical JSON (RFC 8785, JCS, for the values Gridweave puts in): UTF-8, object keys sorted
by code point (all keys are ASCII), no whitespace, strings escaped as JCS does (``\\"``,
``\\\\``, ``\\b \\f \\n \\r \\t``, other control characters ``\\u00xx`` in lowercase hex,
everything else as is), ``null`` for an absent value, and integers only (no floats: wall
time is an integer of microseconds; every integer is within +-(2^53 - 1), so any JCS
implementation prints it the same). Instants are strings ``YYYY-MM-DDTHH:MM:SS.ffffffZ``
(UTC, always six fractional digits). Hashes and keys are lowercase hex.

- A receipt's hash: ``SHA-256(canonical JSON of the receipt entry)``, where the entry is
  the receipt's fields plus ``"v": 1``, ``"seq"`` (its position, from 1) and
  ``"prev_hash"`` (the hash of receipt ``seq - 1``; 64 zeros for the first). Each hash thus
  covers the whole chain before it.
- A batch's signed message: canonical JSON of ``{"v", "type": "gridweave.batch",
  "batch_id", "first_seq", "last_seq", "root", "last_hash"}``; chain_service signs it with
  Ed25519. ``last_hash`` (the hash of receipt ``last_seq``) commits to the chain up to there.
- A batch's anchor transaction in CometBFT: canonical JSON of ``{"v", "type":
  "gridweave.anchor", "batch": {batch_id, first_seq, last_seq, root, last_hash},
  "public_key", "signature"}``; the ABCI application accepts only this exact form.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

__all__ = [
    "ENCODING_VERSION",
    "GENESIS_HASH",
    "MAX_SAFE_INTEGER",
    "SignedBatch",
    "anchor_tx",
    "batch_anchor_tx",
    "batch_message",
    "canonical_json",
    "encode_instant",
    "receipt_hash",
    "sha256_hex",
]

ENCODING_VERSION = 1
#: The previous hash of the first receipt.
GENESIS_HASH = "0" * 64
#: The largest integer every JCS implementation prints exactly (2^53 - 1).
MAX_SAFE_INTEGER = 2**53 - 1


def _check_values(value: Any, path: str) -> None:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise ValueError(f"{path}: integer beyond 2^53 - 1 has no canonical form")
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str) or not key.isascii():
                raise ValueError(f"{path}: keys must be ASCII strings")
            _check_values(item, f"{path}.{key}")
        return
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _check_values(item, f"{path}[{index}]")
        return
    raise ValueError(f"{path}: {type(value).__name__} has no canonical form (no floats)")


def canonical_json(value: Mapping[str, Any]) -> bytes:
    """``value`` as canonical JSON bytes (the RFC 8785 subset described above).

    Raises:
        ValueError: a float, an integer beyond 2^53 - 1, a non-ASCII key or another type.
    """
    _check_values(value, "$")
    # Python's escaping with ensure_ascii=False is JCS's: short escapes for \b \f \n \r \t,
    # \u00xx (lowercase) for the other control characters, every other character as is.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sha256_hex(data: bytes) -> str:
    """SHA-256 of ``data``, lowercase hex."""
    return hashlib.sha256(data).hexdigest()


def encode_instant(value: datetime | None) -> str | None:
    """An instant as ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` (UTC); None stays None."""
    if value is None:
        return None
    if value.tzinfo is None:
        raise ValueError("instants must carry a time zone")
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def receipt_hash(fields: Mapping[str, Any], *, seq: int, prev_hash: str) -> str:
    """The hash of the receipt with ``fields`` at position ``seq`` after ``prev_hash``."""
    entry = {**fields, "v": ENCODING_VERSION, "seq": seq, "prev_hash": prev_hash}
    return sha256_hex(canonical_json(entry))


def batch_message(
    *, batch_id: int, first_seq: int, last_seq: int, root: str, last_hash: str
) -> bytes:
    """The bytes chain_service signs for a batch (and CometBFT carries)."""
    return canonical_json(
        {
            "v": ENCODING_VERSION,
            "type": "gridweave.batch",
            "batch_id": batch_id,
            "first_seq": first_seq,
            "last_seq": last_seq,
            "root": root,
            "last_hash": last_hash,
        }
    )


def anchor_tx(
    *,
    batch_id: int,
    first_seq: int,
    last_seq: int,
    root: str,
    last_hash: str,
    public_key: str,
    signature: str,
) -> bytes:
    """The CometBFT transaction anchoring a signed batch (see the module docstring)."""
    return canonical_json(
        {
            "v": ENCODING_VERSION,
            "type": "gridweave.anchor",
            "batch": {
                "batch_id": batch_id,
                "first_seq": first_seq,
                "last_seq": last_seq,
                "root": root,
                "last_hash": last_hash,
            },
            "public_key": public_key,
            "signature": signature,
        }
    )


class SignedBatch(Protocol):
    """What an anchor transaction is made of: a sealed batch, as stored or as answered."""

    @property
    def batch_id(self) -> int: ...
    @property
    def first_seq(self) -> int: ...
    @property
    def last_seq(self) -> int: ...
    @property
    def root(self) -> str: ...
    @property
    def last_hash(self) -> str: ...
    @property
    def public_key(self) -> str: ...
    @property
    def signature(self) -> str: ...


def batch_anchor_tx(batch: SignedBatch) -> bytes:
    """:func:`anchor_tx` of ``batch``."""
    return anchor_tx(
        batch_id=batch.batch_id,
        first_seq=batch.first_seq,
        last_seq=batch.last_seq,
        root=batch.root,
        last_hash=batch.last_hash,
        public_key=batch.public_key,
        signature=batch.signature,
    )
