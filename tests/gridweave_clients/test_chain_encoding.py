"""The receipt encoding: canonical JSON as RFC 8785 prints it, and the hashes built on it."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta, timezone

import pytest

from gridweave_clients.chain.encoding import (
    GENESIS_HASH,
    batch_message,
    canonical_json,
    encode_instant,
    receipt_hash,
)


class TestCanonicalJson:
    def test_keys_sorted_no_whitespace_and_text_as_is(self) -> None:
        value = {"b": [1, None, True], "a": 'é\u2028"\\\n\x01', "c": {"z": 0, "y": -5}}

        encoded = canonical_json(value)

        assert encoded == (
            '{"a":"é\u2028\\"\\\\\\n\\u0001","b":[1,null,true],"c":{"y":-5,"z":0}}'.encode()
        )

    @pytest.mark.parametrize("bad", [1.5, 2**53, -(2**53), b"x", {1: "x"}])
    def test_what_has_no_canonical_form_is_refused(self, bad: object) -> None:
        with pytest.raises(ValueError):
            canonical_json({"x": bad})

    def test_instants_are_utc_with_six_fraction_digits(self) -> None:
        east = timezone(timedelta(hours=2))

        assert encode_instant(datetime(2026, 12, 3, 9, 0, tzinfo=east)) == (
            "2026-12-03T07:00:00.000000Z"
        )
        assert encode_instant(None) is None
        with pytest.raises(ValueError):
            encode_instant(datetime(2026, 12, 3))  # noqa: DTZ001


class TestHashes:
    def test_a_receipt_hash_is_sha256_of_its_entry_with_position(self) -> None:
        fields = {"cost": 5, "settled_at": encode_instant(datetime(2026, 1, 1, tzinfo=UTC))}
        entry = (
            '{"cost":5,"prev_hash":"' + GENESIS_HASH + '","seq":1,'
            '"settled_at":"2026-01-01T00:00:00.000000Z","v":1}'
        )

        assert receipt_hash(fields, seq=1, prev_hash=GENESIS_HASH) == (
            hashlib.sha256(entry.encode()).hexdigest()
        )
        assert receipt_hash(fields, seq=2, prev_hash=GENESIS_HASH) != receipt_hash(
            fields, seq=1, prev_hash=GENESIS_HASH
        )

    def test_the_batch_message_names_every_sealed_value(self) -> None:
        message = batch_message(
            batch_id=3, first_seq=10, last_seq=12, root="aa" * 32, last_hash="bb" * 32
        )

        assert (
            message
            == (
                '{"batch_id":3,"first_seq":10,"last_hash":"' + "bb" * 32 + '","last_seq":12,'
                '"root":"' + "aa" * 32 + '","type":"gridweave.batch","v":1}'
            ).encode()
        )
