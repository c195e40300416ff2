"""The ABCI methods: CometBFT's requests mapped onto the anchoring state machine.

Blocks are executed on a working copy (``FinalizeBlock``) that becomes the committed state
at ``Commit``, which also writes it to the state file (atomically: a temporary file
renamed), so a restarted application answers ``Info`` with the height it had and
CometBFT replays only the blocks after it. Proposals carry only transactions that are
valid in order (``PrepareProposal``); a proposal with any other is rejected
(``ProcessProposal``). State sync is not offered (no snapshots).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from chain_service.abci.anchors import AnchorState, Code, TxRefused
from chain_service.abci.messages import Response, message_class

__all__ = ["AnchorApplication"]

_logger = logging.getLogger("gridweave")
_ACCEPT = 1  # ProcessProposalStatus / VerifyVoteExtensionStatus: ACCEPT
_REJECT = 2


class AnchorApplication:
    """Gridweave's ABCI application: one instance serves all four CometBFT connections."""

    def __init__(self, *, trusted_key: str, state_file: Path | None) -> None:
        self.trusted_key = trusted_key
        self.state_file = state_file
        self.committed = AnchorState()
        if state_file is not None and state_file.exists():
            self.committed = AnchorState.from_json(json.loads(state_file.read_text()))
        self._working: AnchorState | None = None

    # -- dispatch -------------------------------------------------------------------------
    def handle(self, request: Any) -> Any:
        """The response to one request (an exception response for an unknown one)."""
        kind = request.WhichOneof("value")
        handler = getattr(self, f"_{kind}", None)
        response = Response()
        if handler is None:
            response.exception.error = f"unsupported request {kind}"
            return response
        getattr(response, kind).CopyFrom(handler(getattr(request, kind)))
        return response

    @staticmethod
    def _new(name: str, **fields: Any) -> Any:
        return message_class(name)(**fields)

    # -- info and queries ---------------------------------------------------------------
    def _echo(self, request: Any) -> Any:
        return self._new("EchoResponse", message=request.message)

    def _flush(self, request: Any) -> Any:
        return self._new("FlushResponse")

    def _info(self, request: Any) -> Any:
        return self._new(
            "InfoResponse",
            data="gridweave-anchors",
            version="1",
            app_version=1,
            last_block_height=self.committed.height,
            last_block_app_hash=self.committed.app_hash,
        )

    def _init_chain(self, request: Any) -> Any:
        return self._new("InitChainResponse", app_hash=self.committed.app_hash)

    def _query(self, request: Any) -> Any:
        state = self.committed
        if request.path != "/batch":
            return self._new("QueryResponse", code=Code.NOT_FOUND, log="paths: /batch")
        try:
            batch_id = int(request.data.decode())
        except ValueError:
            return self._new("QueryResponse", code=Code.MALFORMED, log="data: a batch id")
        record = state.anchors.get(batch_id)
        if record is None:
            return self._new(
                "QueryResponse",
                code=Code.NOT_FOUND,
                log=f"batch {batch_id} is not anchored",
                height=state.height,
            )
        return self._new(
            "QueryResponse",
            key=str(batch_id).encode(),
            value=json.dumps(record.to_json(), sort_keys=True).encode(),
            height=state.height,
        )

    # -- mempool ------------------------------------------------------------------------
    def _check_tx(self, request: Any) -> Any:
        try:
            self.committed.check(request.tx, trusted_key=self.trusted_key)
        except TxRefused as exc:
            return self._new("CheckTxResponse", code=exc.code, log=exc.log)
        return self._new("CheckTxResponse", code=Code.OK)

    # -- consensus ----------------------------------------------------------------------
    def _valid_in_order(self, txs: Any) -> list[bytes]:
        state, valid = self.committed, []
        for tx in txs:
            try:
                batch = state.check(tx, trusted_key=self.trusted_key)
            except TxRefused:
                continue
            state = state.apply(tx, batch, height=state.height + 1)
            valid.append(tx)
        return valid

    def _prepare_proposal(self, request: Any) -> Any:
        chosen, size = [], 0
        for tx in self._valid_in_order(request.txs):
            size += len(tx)
            if size > request.max_tx_bytes:
                break
            chosen.append(tx)
        return self._new("PrepareProposalResponse", txs=chosen)

    def _process_proposal(self, request: Any) -> Any:
        ok = len(self._valid_in_order(request.txs)) == len(request.txs)
        return self._new("ProcessProposalResponse", status=_ACCEPT if ok else _REJECT)

    def _extend_vote(self, request: Any) -> Any:
        return self._new("ExtendVoteResponse")

    def _verify_vote_extension(self, request: Any) -> Any:
        return self._new("VerifyVoteExtensionResponse", status=_ACCEPT)

    def _finalize_block(self, request: Any) -> Any:
        state, results = self.committed, []
        for tx in request.txs:
            try:
                batch = state.check(tx, trusted_key=self.trusted_key)
            except TxRefused as exc:
                results.append(self._new("ExecTxResult", code=exc.code, log=exc.log))
                continue
            state = state.apply(tx, batch, height=request.height)
            results.append(self._new("ExecTxResult", code=Code.OK, data=tx[:0]))
        self._working = AnchorState(
            height=request.height,
            app_hash=state.app_hash,
            anchors=state.anchors,
            last_batch_id=state.last_batch_id,
            last_seq=state.last_seq,
        )
        return self._new(
            "FinalizeBlockResponse", tx_results=results, app_hash=self._working.app_hash
        )

    def _commit(self, request: Any) -> Any:
        if self._working is not None:
            self.committed, self._working = self._working, None
            self._save()
        return self._new("CommitResponse")

    def _save(self) -> None:
        if self.state_file is None:
            return
        temporary = self.state_file.with_suffix(".tmp")
        temporary.write_text(json.dumps(self.committed.to_json()))
        with temporary.open("rb") as handle:
            os.fsync(handle.fileno())
        temporary.replace(self.state_file)

    # -- state sync: not offered --------------------------------------------------------
    def _list_snapshots(self, request: Any) -> Any:
        return self._new("ListSnapshotsResponse")

    def _offer_snapshot(self, request: Any) -> Any:
        return self._new("OfferSnapshotResponse", result=2)  # ABORT

    def _load_snapshot_chunk(self, request: Any) -> Any:
        return self._new("LoadSnapshotChunkResponse")

    def _apply_snapshot_chunk(self, request: Any) -> Any:
        return self._new("ApplySnapshotChunkResponse", result=2)  # ABORT
