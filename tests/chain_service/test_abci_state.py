"""The anchoring state machine and the ABCI application, without a node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chain_service.abci.anchors import AnchorState, Code, TxRefused
from chain_service.abci.application import AnchorApplication
from chain_service.abci.framing import encode_frame
from chain_service.abci.messages import Request, message_class
from chain_service.signing import SigningKey, load_signing_key
from gridweave_clients.chain.encoding import anchor_tx, batch_message


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> SigningKey:
    return load_signing_key(tmp_path_factory.mktemp("key") / "k.pem")


def _tx(key: SigningKey, batch_id: int, first_seq: int, last_seq: int) -> bytes:
    fields: dict[str, Any] = {
        "batch_id": batch_id,
        "first_seq": first_seq,
        "last_seq": last_seq,
        "root": f"{batch_id:064x}",
        "last_hash": f"{last_seq:064x}",
    }
    return anchor_tx(
        **fields, public_key=key.public_key_hex, signature=key.sign(batch_message(**fields))
    )


def _block(app: AnchorApplication, height: int, *txs: bytes) -> list[int]:
    request = Request(finalize_block=message_class("FinalizeBlockRequest")(txs=txs, height=height))
    codes = [r.code for r in app.handle(request).finalize_block.tx_results]
    app.handle(Request(commit=message_class("CommitRequest")()))
    return codes


def test_batches_extend_in_order_once_each(key: SigningKey) -> None:
    state = AnchorState()
    one, two = _tx(key, 1, 1, 4), _tx(key, 2, 5, 5)
    with pytest.raises(TxRefused) as early:
        state.check(two, trusted_key=key.public_key_hex)
    state = state.apply(one, state.check(one, trusted_key=key.public_key_hex), height=2)
    with pytest.raises(TxRefused) as again:
        state.check(one, trusted_key=key.public_key_hex)

    assert early.value.code == Code.OUT_OF_ORDER
    assert again.value.code == Code.DUPLICATE
    assert state.check(two, trusted_key=key.public_key_hex)["first_seq"] == 5


def test_a_block_refuses_its_bad_txs_and_a_restart_keeps_the_state(
    key: SigningKey, tmp_path: Path
) -> None:
    state_file = tmp_path / "anchors.json"
    app = AnchorApplication(trusted_key=key.public_key_hex, state_file=state_file)
    codes = _block(app, 1, _tx(key, 1, 1, 2), _tx(key, 1, 1, 2), _tx(key, 3, 9, 9), b"{}")
    restarted = AnchorApplication(trusted_key=key.public_key_hex, state_file=state_file)
    info = restarted.handle(Request(info=message_class("InfoRequest")())).info

    assert codes == [Code.OK, Code.DUPLICATE, Code.OUT_OF_ORDER, Code.MALFORMED]
    assert (info.last_block_height, info.last_block_app_hash) == (1, app.committed.app_hash)
    assert restarted.committed.anchors == app.committed.anchors
    query = message_class("QueryRequest")(path="/batch", data=b"1")
    assert b'"height": 1' in restarted.handle(Request(query=query)).query.value


def test_every_validator_computes_the_same_app_hash(key: SigningKey) -> None:
    txs = [_tx(key, 1, 1, 3), _tx(key, 2, 4, 6)]
    hashes = set()
    for _ in range(2):
        app = AnchorApplication(trusted_key=key.public_key_hex, state_file=None)
        _block(app, 1, txs[0])
        _block(app, 2, txs[1])
        hashes.add(app.committed.app_hash)

    assert len(hashes) == 1 and b"" not in hashes


def test_a_proposal_with_an_invalid_tx_is_rejected(key: SigningKey) -> None:
    app = AnchorApplication(trusted_key=key.public_key_hex, state_file=None)
    good, stale = _tx(key, 1, 1, 1), _tx(key, 5, 9, 9)
    process = message_class("ProcessProposalRequest")
    prepare = message_class("PrepareProposalRequest")

    assert app.handle(Request(process_proposal=process(txs=[good]))).process_proposal.status == 1
    assert (
        app.handle(Request(process_proposal=process(txs=[good, stale]))).process_proposal.status
        == 2
    )
    prepared = app.handle(Request(prepare_proposal=prepare(txs=[stale, good], max_tx_bytes=10**6)))
    assert list(prepared.prepare_proposal.txs) == [good]


def test_frames_carry_their_uvarint_length() -> None:
    assert encode_frame(b"x" * 300)[:2] == bytes([0xAC, 0x02])
    assert encode_frame(b"") == b"\x00"
