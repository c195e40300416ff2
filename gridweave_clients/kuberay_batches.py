"""Writes to kuberay-service sent together when many are waiting: one request, many calls.

A busy caller (the gateway placing thousands of jobs) spends most of a proxied write's
cost on the HTTP request itself, on both sides. :class:`WriteBatches` sends each write
alone while fewer than ``alone`` are in flight, exactly as before; a write that arrives
when that many are already out waits, and when one of them is answered, every write then
waiting goes out in one ``POST /v1/crd/batch`` (at most ``MAX_BATCH_CALLS``). A lone
caller therefore sees no change, and a busy one pays one request per batch.

Each call's answer is the code and body its own route would have given, so each caller
gets its own result or its own exception. A batch that fails as a whole (connection lost)
fails each of its calls with that error; like any write it is not sent again once it may
have arrived. A caller cancelled while its write waits is left out of the batch: its
write is never sent.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from gridweave_clients._core import Call, encode_json
from gridweave_clients.base import AsyncInternalClient
from gridweave_clients.kuberay_wire import (
    batch_call_for,
    decode_result,
    error_from_status_answer,
    request_for,
    result_from,
)
from gridweave_controller.errors import CrdError, TransportError
from gridweave_controller.operations import BATCH_PATH, CRD_PREFIX, MAX_BATCH_CALLS, Operation

__all__ = ["DEFAULT_ALONE", "WriteBatches"]

#: Writes in flight before the next ones wait to go together.
DEFAULT_ALONE = 4


@dataclass(eq=False)
class _Waiting:
    """A write waiting for the next batch."""

    operation: Operation[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    #: The call as a batch carries it (made when it starts waiting: a bad argument is
    #: refused to its caller then, before anything is sent).
    batched: dict[str, Any]
    answer: asyncio.Future[Any] = field(default_factory=asyncio.Future)


class WriteBatches:
    """Writes sent alone while fewer than ``alone`` are in flight; the rest in batches.

    ``alone=0`` sends every write inside a batch, even alone (one batch in flight at a time).
    """

    def __init__(self, client: AsyncInternalClient, alone: int = DEFAULT_ALONE) -> None:
        if alone < 0:
            raise ValueError("alone must be >= 0")
        self._client = client
        self._alone = alone
        self._in_flight = 0
        self._waiting: list[_Waiting] = []
        self._sending: set[asyncio.Task[None]] = set()

    async def write(
        self, operation: Operation[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """Perform the write ``operation(*args, **kwargs)``; its result or its error."""
        if self._in_flight < self._alone and not self._waiting:
            call = request_for(operation, args, kwargs)
            self._in_flight += 1
            try:
                answer = await self._client.send(call)
            finally:
                self._in_flight -= 1
                self._send_waiting()
            return result_from(operation, answer)
        waiting = _Waiting(operation, args, kwargs, batch_call_for(operation, args, kwargs))
        self._waiting.append(waiting)
        self._send_waiting()
        return await waiting.answer

    def _send_waiting(self) -> None:
        while self._waiting and self._in_flight < max(self._alone, 1):
            batch = [w for w in self._waiting[:MAX_BATCH_CALLS] if not w.answer.done()]
            del self._waiting[:MAX_BATCH_CALLS]
            if batch:
                self._in_flight += 1
                task = asyncio.create_task(self._send(batch))
                self._sending.add(task)
                task.add_done_callback(self._sending.discard)

    async def _send(self, batch: list[_Waiting]) -> None:
        try:
            if len(batch) == 1 and self._alone:
                await self._send_one(batch[0])
            else:
                await self._send_batch(batch)
        except BaseException as error:
            failure = error if isinstance(error, CrdError) else TransportError(str(error))
            for waiting in batch:
                if not waiting.answer.done():
                    waiting.answer.set_exception(failure)
            if not isinstance(error, Exception):
                raise
        finally:
            self._in_flight -= 1
            self._send_waiting()

    async def _send_one(self, waiting: _Waiting) -> None:
        call = request_for(waiting.operation, waiting.args, waiting.kwargs)
        answer = await self._client.send(call)
        if not waiting.answer.done():
            waiting.answer.set_result(result_from(waiting.operation, answer))

    async def _send_batch(self, batch: list[_Waiting]) -> None:
        body = encode_json({"calls": [waiting.batched for waiting in batch]})
        answer = await self._client.send(Call("POST", CRD_PREFIX + BATCH_PATH, body=body))
        results = answer.json()["results"]
        if len(results) != len(batch):
            raise TransportError(f"a batch of {len(batch)} calls got {len(results)} answers")
        for waiting, result in zip(batch, results, strict=True):
            if waiting.answer.done():  # its caller was cancelled meanwhile
                continue
            code, body = result["code"], result["body"]
            if 200 <= code < 300:
                waiting.answer.set_result(decode_result(waiting.operation, body))
            else:
                waiting.answer.set_exception(error_from_status_answer(code, body or {}))
