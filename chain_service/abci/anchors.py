"""The anchoring state machine: which transactions are valid, and what a block does.

A transaction is valid when it is exactly ``encoding.anchor_tx(...)`` of a batch signed
(Ed25519, over ``encoding.batch_message``) by the trusted key, and it extends the anchored
batches: ``batch_id`` is the next one and ``first_seq`` follows the last anchored seq.
Everything else is refused with a code (``Code``) and a log saying why; an anchored batch
sent again is ``DUPLICATE``. The state is deterministic: every validator computes the
same ``app_hash`` (SHA-256 of the previous one and each accepted transaction's hash).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from gridweave_clients.chain.encoding import anchor_tx, batch_message

__all__ = ["AnchorRecord", "AnchorState", "Code", "TxRefused", "parse_anchor_tx"]

_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_HEX128 = re.compile(r"^[0-9a-f]{128}$")
_MAX_TX_BYTES = 1024


class Code(IntEnum):
    """ABCI result codes of the application (0 is success)."""

    OK = 0
    MALFORMED = 1
    UNTRUSTED_KEY = 2
    BAD_SIGNATURE = 3
    DUPLICATE = 4
    OUT_OF_ORDER = 5
    NOT_FOUND = 6


class TxRefused(Exception):
    """A transaction the application does not accept, with its code."""

    def __init__(self, code: Code, log: str) -> None:
        super().__init__(log)
        self.code = code
        self.log = log


@dataclass(frozen=True)
class AnchorRecord:
    """An anchored batch: what it sealed and where it was committed."""

    batch_id: int
    first_seq: int
    last_seq: int
    root: str
    last_hash: str
    height: int
    tx_hash: str

    def to_json(self) -> dict[str, Any]:
        """The record as the ``/batch`` query answers it."""
        return {
            "batch_id": self.batch_id,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "root": self.root,
            "last_hash": self.last_hash,
            "height": self.height,
            "tx_hash": self.tx_hash,
        }


def _positive(value: object, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise TxRefused(Code.MALFORMED, f"{name} must be a positive integer")
    return value


def _hex(value: object, name: str, pattern: re.Pattern[str]) -> str:
    if not isinstance(value, str) or not pattern.match(value):
        raise TxRefused(Code.MALFORMED, f"{name} must be lowercase hex of the right length")
    return value


def parse_anchor_tx(tx: bytes, *, trusted_key: str) -> dict[str, Any]:
    """The batch of a well-formed, correctly signed anchor transaction.

    Raises:
        TxRefused: MALFORMED, UNTRUSTED_KEY or BAD_SIGNATURE, with the reason.
    """
    if len(tx) > _MAX_TX_BYTES:
        raise TxRefused(Code.MALFORMED, "transaction too large")
    try:
        body = json.loads(tx)
    except ValueError as exc:
        raise TxRefused(Code.MALFORMED, "not JSON") from exc
    if not isinstance(body, dict) or set(body) != {
        "v",
        "type",
        "batch",
        "public_key",
        "signature",
    }:
        raise TxRefused(Code.MALFORMED, "not a gridweave.anchor transaction")
    batch = body["batch"]
    if body["v"] != 1 or body["type"] != "gridweave.anchor" or not isinstance(batch, dict):
        raise TxRefused(Code.MALFORMED, "not a gridweave.anchor v1 transaction")
    if set(batch) != {"batch_id", "first_seq", "last_seq", "root", "last_hash"}:
        raise TxRefused(Code.MALFORMED, "batch fields missing or unknown")
    values: dict[str, Any] = {
        "batch_id": _positive(batch["batch_id"], "batch_id"),
        "first_seq": _positive(batch["first_seq"], "first_seq"),
        "last_seq": _positive(batch["last_seq"], "last_seq"),
        "root": _hex(batch["root"], "root", _HEX64),
        "last_hash": _hex(batch["last_hash"], "last_hash", _HEX64),
    }
    if values["first_seq"] > values["last_seq"]:
        raise TxRefused(Code.MALFORMED, "first_seq after last_seq")
    public_key = _hex(body["public_key"], "public_key", _HEX64)
    signature = _hex(body["signature"], "signature", _HEX128)
    if anchor_tx(**values, public_key=public_key, signature=signature) != tx:
        raise TxRefused(Code.MALFORMED, "not in canonical form")
    if public_key != trusted_key:
        raise TxRefused(Code.UNTRUSTED_KEY, "signed by a key this chain does not trust")
    try:
        Ed25519PublicKey.from_public_bytes(bytes.fromhex(public_key)).verify(
            bytes.fromhex(signature), batch_message(**values)
        )
    except InvalidSignature as exc:
        raise TxRefused(Code.BAD_SIGNATURE, "the signature does not verify") from exc
    return values


@dataclass(frozen=True)
class AnchorState:
    """The anchored batches, as of a height; immutable (each block makes a new one)."""

    height: int = 0
    app_hash: bytes = b""
    anchors: dict[int, AnchorRecord] = field(default_factory=dict)
    last_batch_id: int = 0
    last_seq: int = 0

    def check(self, tx: bytes, *, trusted_key: str) -> dict[str, Any]:
        """The batch ``tx`` anchors, if it extends this state.

        Raises:
            TxRefused: malformed, untrusted, badly signed, a duplicate or out of order.
        """
        batch = parse_anchor_tx(tx, trusted_key=trusted_key)
        if batch["batch_id"] in self.anchors:
            raise TxRefused(Code.DUPLICATE, f"batch {batch['batch_id']} is anchored already")
        if batch["batch_id"] != self.last_batch_id + 1 or batch["first_seq"] != self.last_seq + 1:
            raise TxRefused(
                Code.OUT_OF_ORDER,
                f"expected batch {self.last_batch_id + 1} from seq {self.last_seq + 1}",
            )
        return batch

    def apply(self, tx: bytes, batch: dict[str, Any], *, height: int) -> AnchorState:
        """This state with ``batch`` (checked) anchored by ``tx`` at ``height``."""
        tx_hash = hashlib.sha256(tx).hexdigest()
        record = AnchorRecord(**batch, height=height, tx_hash=tx_hash)
        return replace(
            self,
            anchors={**self.anchors, record.batch_id: record},
            last_batch_id=record.batch_id,
            last_seq=record.last_seq,
            app_hash=hashlib.sha256(self.app_hash + bytes.fromhex(tx_hash)).digest(),
        )

    def to_json(self) -> dict[str, Any]:
        """The state, for the application's state file."""
        return {
            "height": self.height,
            "app_hash": self.app_hash.hex(),
            "anchors": [record.to_json() for record in self.anchors.values()],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AnchorState:
        """The state a state file holds."""
        records = [AnchorRecord(**item) for item in data["anchors"]]
        last = records[-1] if records else None
        return cls(
            height=int(data["height"]),
            app_hash=bytes.fromhex(data["app_hash"]),
            anchors={record.batch_id: record for record in records},
            last_batch_id=0 if last is None else last.batch_id,
            last_seq=0 if last is None else last.last_seq,
        )
