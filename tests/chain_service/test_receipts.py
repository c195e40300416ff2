"""Appending receipts: once per settlement, in one unforkable chain, refused when malformed."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError, IntegrityError

from gridweave_clients.chain import verify_chain
from gridweave_clients.chain.encoding import GENESIS_HASH
from gridweave_runtime.responses import REPLAYED_HEADER
from tests.chain_service.factories import receipt_body, unique, whole_chain


class TestRecordReceipt:
    def test_receipts_form_a_chain_from_genesis(self, chain: httpx.Client) -> None:
        first = chain.post("/v1/receipts", json=receipt_body())
        second = chain.post("/v1/receipts", json=receipt_body())

        assert first.status_code == second.status_code == 201
        assert first.json()["seq"] == 1 and first.json()["prev_hash"] == GENESIS_HASH
        assert second.json()["seq"] == 2 and second.json()["prev_hash"] == first.json()["hash"]
        assert verify_chain(whole_chain(chain).receipts).ok

    def test_a_replay_returns_the_first_receipt_and_appends_nothing(
        self, chain: httpx.Client
    ) -> None:
        body = receipt_body()
        first = chain.post("/v1/receipts", json=body)
        again = chain.post("/v1/receipts", json=body)

        assert again.status_code == 200
        assert again.headers[REPLAYED_HEADER] == "true"
        assert again.json()["hash"] == first.json()["hash"]
        assert len(whole_chain(chain).receipts) == 1

    def test_the_same_settlement_with_other_figures_is_a_409_naming_them(
        self, chain: httpx.Client
    ) -> None:
        body = receipt_body()
        chain.post("/v1/receipts", json=body)

        response = chain.post("/v1/receipts", json={**body, "cost": 1, "charged": 1})

        assert response.status_code == 409
        assert response.json()["error"]["code"] == "receipt_conflict"
        assert response.json()["error"]["differing_fields"] == ["charged", "cost"]

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("cost", 2**53),
            ("wall_microseconds", 1.5),
            ("kind", "lease"),
            ("result_ref_sha256", "AB" * 32),
            ("gpu_count", 0),
            ("finished_at", "2026-12-03T07:00:00"),
        ],
    )
    def test_a_bad_field_is_a_422_naming_it(
        self, chain: httpx.Client, field: str, value: object
    ) -> None:
        response = chain.post("/v1/receipts", json={**receipt_body(), field: value})

        assert response.status_code == 422
        assert field in response.text
        assert whole_chain(chain).receipts == []


class TestNoFork:
    def test_concurrent_appends_make_one_chain(self, chain: httpx.Client) -> None:
        bodies = [receipt_body() for _ in range(24)]
        with ThreadPoolExecutor(max_workers=8) as pool:
            codes = list(pool.map(lambda b: chain.post("/v1/receipts", json=b).status_code, bodies))

        receipts = whole_chain(chain).receipts
        assert codes == [201] * 24
        assert [r.seq for r in receipts] == list(range(1, 25))
        assert {r.hold_reference for r in receipts} == {b["hold_reference"] for b in bodies}
        assert verify_chain(receipts).ok

    def test_the_database_refuses_a_second_receipt_after_the_same_one(
        self, chain: httpx.Client, chain_database: str
    ) -> None:
        first = chain.post("/v1/receipts", json=receipt_body()).json()
        chain.post("/v1/receipts", json=receipt_body())
        engine = create_engine(chain_database)
        try:
            with pytest.raises(IntegrityError, match="uq_receipts_prev_hash"):
                with engine.begin() as connection:
                    # a writer that skipped the lock, extending receipt 1 a second time
                    connection.execute(
                        text(
                            "INSERT INTO receipts SELECT 3, :prev, repeat('f', 64), kind, "
                            ":ref, :ref, user_id, owner_id, node, vendor, gpu_model, gpu_count, "
                            "vram_mb, started_at, finished_at, wall_microseconds, "
                            "billed_seconds, price_per_gpu_second, cost, charged, settled_at, "
                            "result_ref_sha256 FROM receipts WHERE seq = 1"
                        ),
                        {"prev": first["hash"], "ref": unique("fork")},
                    )
        finally:
            engine.dispose()

    def test_receipts_cannot_be_updated_or_deleted(
        self, chain: httpx.Client, chain_database: str
    ) -> None:
        chain.post("/v1/receipts", json=receipt_body())
        engine = create_engine(chain_database)
        try:
            for statement in (
                "UPDATE receipts SET cost = 0",
                "DELETE FROM receipts",
                "TRUNCATE receipts",
            ):
                with pytest.raises(DBAPIError, match="append-only"):
                    with engine.begin() as connection:
                        connection.execute(text(statement))
        finally:
            engine.dispose()
        assert len(whole_chain(chain).receipts) == 1


class TestRecordReceiptsInOneCall:
    def test_appends_in_order_and_answers_replays_with_the_first_receipts(
        self, chain: httpx.Client
    ) -> None:
        known = receipt_body()
        first = chain.post("/v1/receipts", json=known).json()
        fresh = [receipt_body(), receipt_body()]

        response = chain.post("/v1/receipts/batch", json={"receipts": [fresh[0], known, fresh[1]]})

        assert response.status_code == 200, response.text
        assert [r["seq"] for r in response.json()["receipts"]] == [2, 1, 3]
        assert response.json()["replayed"] == [False, True, False]
        assert response.json()["receipts"][1]["hash"] == first["hash"]
        assert verify_chain(whole_chain(chain).receipts).ok

    def test_a_conflict_appends_nothing_and_a_repeated_reference_is_a_422(
        self, chain: httpx.Client
    ) -> None:
        known = receipt_body()
        chain.post("/v1/receipts", json=known)
        twice = receipt_body()

        conflict = chain.post(
            "/v1/receipts/batch", json={"receipts": [receipt_body(), {**known, "cost": 7}]}
        )
        repeated = chain.post("/v1/receipts/batch", json={"receipts": [twice, twice]})

        assert conflict.status_code == 409
        assert repeated.status_code == 422 and "receipts" in repeated.text
        assert len(whole_chain(chain).receipts) == 1
