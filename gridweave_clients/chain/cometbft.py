"""Checking a CometBFT anchor locally: the transaction, its block, and the block's commit.

What the anchor carries (``AnchorResponse.proof``, stored by chain_service when the batch
was committed): ``tx`` (the ``/tx?prove=true`` answer: the transaction and its Merkle
proof), ``signed_header`` (``/commit``: the block header and its commit) and
``validators`` (``/validators`` at that height). The checks, in CometBFT's own encodings:

- the transaction is exactly the batch's anchor (``encoding.anchor_tx``) and hashes to
  the recorded transaction hash;
- its proof leads to the header's ``data_hash`` (CometBFT's Merkle tree of the
  transactions' SHA-256 is RFC 6962's, so ``merkle.root_from_path`` checks it);
- the header hashes (RFC 6962 tree over its 14 protobuf-encoded fields) to the block id
  the commit signed, at the anchor's height, on the expected chain;
- the validator set hashes to the header's ``validators_hash``, and validators holding
  more than two thirds of its voting power signed the commit (Ed25519 over each vote's
  canonical sign bytes). Without a trusted set the verifier takes the set the proof
  names; with one (e.g. from genesis), the proof's set must be it.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from gridweave_clients.chain.merkle import merkle_root, root_from_path

__all__ = [
    "commit_power",
    "header_hash",
    "tx_root",
    "validator_set_hash",
    "vote_sign_bytes",
]

_PRECOMMIT = 2
_FLAG_COMMIT = 2
_FLAG_NIL = 3


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1  # negative int64 as two's complement, as protobuf does
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _uint(field: int, value: int) -> bytes:
    return b"" if value == 0 else _key(field, 0) + _varint(value)


def _bytes(field: int, value: bytes, *, always: bool = False) -> bytes:
    if not value and not always:
        return b""
    return _key(field, 2) + _varint(len(value)) + value


def _sfixed64(field: int, value: int) -> bytes:
    return b"" if value == 0 else _key(field, 1) + struct.pack("<q", value)


def _hex(value: str) -> bytes:
    return bytes.fromhex(value) if value else b""


def _timestamp(value: str) -> bytes:
    """A protobuf Timestamp of an RFC 3339 instant with up to nine fraction digits."""
    base, _, fraction = value.rstrip("Z").partition(".")
    seconds = int(datetime.fromisoformat(base).replace(tzinfo=UTC).timestamp())
    nanos = int((fraction or "0").ljust(9, "0")[:9])
    return _uint(1, seconds) + _uint(2, nanos)


def _part_set_header(parts: Mapping[str, Any]) -> bytes:
    return _uint(1, int(parts.get("total") or 0)) + _bytes(2, _hex(parts.get("hash") or ""))


def _block_id(block_id: Mapping[str, Any]) -> bytes:
    # gogoproto non-nullable: the part set header is written even when empty
    return _bytes(1, _hex(block_id.get("hash") or "")) + _bytes(
        2, _part_set_header(block_id.get("parts") or {}), always=True
    )


def header_hash(header: Mapping[str, Any]) -> bytes:
    """The block hash: RFC 6962 root over the header's fields, each protobuf-encoded."""
    version = header["version"]
    wrapped = [
        _bytes(1, _hex(header[name]))
        for name in (
            "last_commit_hash",
            "data_hash",
            "validators_hash",
            "next_validators_hash",
            "consensus_hash",
            "app_hash",
            "last_results_hash",
            "evidence_hash",
            "proposer_address",
        )
    ]
    fields = [
        _uint(1, int(version["block"])) + _uint(2, int(version.get("app") or 0)),
        _bytes(1, header["chain_id"].encode()),
        _uint(1, int(header["height"])),
        _timestamp(header["time"]),
        _block_id(header["last_block_id"]),
        *wrapped,
    ]
    return merkle_root(fields)


def tx_root(tx: bytes, proof: Mapping[str, Any]) -> bytes | None:
    """The data hash the transaction's proof leads to (None: a proof of another shape)."""
    aunts = [base64.b64decode(aunt) for aunt in proof.get("aunts") or []]
    return root_from_path(
        hashlib.sha256(tx).digest(), int(proof["index"]), int(proof["total"]), aunts
    )


def _public_key(validator: Mapping[str, Any]) -> bytes:
    key = validator["pub_key"]
    if key.get("type") != "tendermint/PubKeyEd25519":
        raise ValueError(f"validator {validator.get('address')}: not an Ed25519 key")
    return base64.b64decode(key["value"])


def validator_set_hash(validators: Sequence[Mapping[str, Any]]) -> bytes:
    """The hash of a validator set (RFC 6962 root over each SimpleValidator's encoding)."""
    leaves = [
        _bytes(1, _bytes(1, _public_key(v))) + _uint(2, int(v["voting_power"])) for v in validators
    ]
    return merkle_root(leaves) if leaves else hashlib.sha256(b"").digest()


def vote_sign_bytes(
    *, chain_id: str, height: int, round_: int, block_id: Mapping[str, Any] | None, timestamp: str
) -> bytes:
    """What a validator signs for a precommit: a length-prefixed CanonicalVote."""
    body = _uint(1, _PRECOMMIT) + _sfixed64(2, height) + _sfixed64(3, round_)
    if block_id is not None:
        canonical = _bytes(1, _hex(block_id.get("hash") or "")) + _bytes(
            2, _part_set_header(block_id.get("parts") or {}), always=True
        )
        body += _bytes(4, canonical, always=True)
    body += _bytes(5, _timestamp(timestamp), always=True) + _bytes(6, chain_id.encode())
    return _varint(len(body)) + body


def commit_power(
    signed_header: Mapping[str, Any], validators: Sequence[Mapping[str, Any]]
) -> tuple[int, int]:
    """(voting power whose commit signature for the block verifies, total power)."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    header, commit = signed_header["header"], signed_header["commit"]
    by_address = {str(v["address"]).upper(): v for v in validators}
    total = sum(int(v["voting_power"]) for v in validators)
    signed, seen = 0, set()
    for signature in commit["signatures"]:
        flag = int(signature["block_id_flag"])
        address = str(signature.get("validator_address") or "").upper()
        validator = by_address.get(address)
        if flag != _FLAG_COMMIT or validator is None or address in seen:
            continue
        key = _public_key(validator)
        if hashlib.sha256(key).digest()[:20].hex().upper() != address:
            continue
        message = vote_sign_bytes(
            chain_id=header["chain_id"],
            height=int(commit["height"]),
            round_=int(commit["round"]),
            block_id=commit["block_id"] if flag == _FLAG_COMMIT else None,
            timestamp=signature["timestamp"],
        )
        try:
            Ed25519PublicKey.from_public_bytes(key).verify(
                base64.b64decode(signature["signature"]), message
            )
        except (InvalidSignature, ValueError):
            continue
        seen.add(address)
        signed += int(validator["voting_power"])
    return signed, total
