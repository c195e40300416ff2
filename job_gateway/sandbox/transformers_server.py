"""The ``transformers`` mode's server: OpenAI's routes over Hugging Face transformers.

It runs inside the replica's container (:mod:`job_gateway.endpoints.sandboxed_backend`), as
the owner's user with no network, never in the replica: loading a model runs the model's
code (a checkpoint may be a pickle). The replica's node mounts this file read-only at
``/opt/gridweave`` as ``gridweave_transformers``, its own Python packages (torch,
transformers, starlette, uvicorn) at ``/opt/gridweave/env``, the model directory at
``/opt/gridweave/model``, and starts ``python3 -m gridweave_transformers --model DIR --name
NAME``, which serves on ``127.0.0.1:$PORT`` in the container (the serving runner relays its
socket there). It imports nothing of Gridweave.

A directory holding a sentence-transformers model (``modules.json``) serves
``/v1/embeddings``; any other causal language model serves ``/v1/completions`` and
``/v1/chat/completions``, streamed as server-sent events token by token when ``stream`` is
true. A model that cannot be loaded ends the process with its reason in
``/run/gridweave/failed.json``, which the replica reports.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
import time
import traceback
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

__all__ = ["TransformersBackend", "error_response", "main"]

_MAX_TOKENS = 4096
#: Where the serving runner's directory is (its ``failed.json``), as it mounts it.
_SERVE_DIR = os.environ.get("GRIDWEAVE_SERVE_DIR", "/run/gridweave")


def error_response(status: int, kind: str, message: str) -> JSONResponse:
    """An error in OpenAI's shape: ``{"error": {"type", "message"}}``."""
    return JSONResponse({"error": {"type": kind, "message": message}}, status_code=status)


class TransformersBackend:
    """A causal language model (completions, chat) or a sentence model (embeddings)."""

    def __init__(self, name: str, directory: Path) -> None:
        import torch

        self.name = name
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.embedder: Any = None
        self.model: Any = None
        self.tokenizer: Any = None
        if (directory / "modules.json").is_file():
            from sentence_transformers import SentenceTransformer

            self.embedder = SentenceTransformer(
                str(directory), device=self.device, local_files_only=True
            )
        else:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
            self.model = AutoModelForCausalLM.from_pretrained(directory, local_files_only=True)
            self.model.to(self.device).eval()
        self._lock = asyncio.Lock()  # one generation at a time per replica

    async def handle(self, method: str, path: str, request: Request) -> Response:
        """OpenAI's routes."""
        if method == "GET" and path == "/v1/models":
            return JSONResponse({"object": "list", "data": [{"id": self.name, "object": "model"}]})
        routes = {
            "/v1/completions": self._completions,
            "/v1/chat/completions": self._chat,
            "/v1/embeddings": self._embeddings,
        }
        route = routes.get(path)
        if route is None:
            return error_response(404, "not_found", f"no route {path}")
        if method != "POST":
            return error_response(405, "method_not_allowed", f"{path} takes POST")
        try:
            body = json.loads(await request.body() or b"{}")
        except ValueError as error:
            return error_response(400, "invalid_request_error", f"the body is not JSON: {error}")
        if not isinstance(body, dict):
            return error_response(400, "invalid_request_error", "the body must be an object")
        try:
            return await route(body)
        except _BadRequest as error:
            return error_response(400, "invalid_request_error", str(error))

    # -- embeddings ---------------------------------------------------------------------

    async def _embeddings(self, body: dict[str, Any]) -> Response:
        if self.embedder is None:
            raise _BadRequest(f"{self.name} is not an embedding model")
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else inputs
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            raise _BadRequest("input must be a string or a non-empty list of strings")
        vectors = await asyncio.to_thread(self.embedder.encode, texts)
        data = [
            {"object": "embedding", "index": i, "embedding": [float(x) for x in vector]}
            for i, vector in enumerate(vectors)
        ]
        tokens = sum(len(t.split()) for t in texts)
        return JSONResponse(
            {
                "object": "list",
                "model": self.name,
                "data": data,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    # -- generation ---------------------------------------------------------------------

    async def _completions(self, body: dict[str, Any]) -> Response:
        prompt = body.get("prompt")
        if not isinstance(prompt, str):
            raise _BadRequest("prompt must be a string")
        return await self._generate(prompt, body, chat=False)

    async def _chat(self, body: dict[str, Any]) -> Response:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _BadRequest("messages must be a non-empty list")
        for message in messages:
            if not isinstance(message, dict) or not isinstance(message.get("content"), str):
                raise _BadRequest("each message needs a role and a string content")
        return await self._generate(self._chat_prompt(messages), body, chat=True)

    def _chat_prompt(self, messages: list[dict[str, Any]]) -> str:
        if self.tokenizer is not None and getattr(self.tokenizer, "chat_template", None):
            prompt: str = self.tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
            return prompt
        lines = [f"{m.get('role', 'user')}: {m['content']}" for m in messages]
        return "\n".join(lines) + "\nassistant:"

    async def _generate(self, prompt: str, body: dict[str, Any], *, chat: bool) -> Response:
        if self.model is None:
            raise _BadRequest(f"{self.name} is an embedding model: use /v1/embeddings")
        max_tokens = body.get("max_tokens", 16)
        if not isinstance(max_tokens, int) or not 1 <= max_tokens <= _MAX_TOKENS:
            raise _BadRequest(f"max_tokens must be an integer in 1..{_MAX_TOKENS}")
        temperature = body.get("temperature", 0)
        if not isinstance(temperature, (int, float)) or temperature < 0:
            raise _BadRequest("temperature must be a number >= 0")
        ident = f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex[:24]}"
        created = int(time.time())
        if body.get("stream"):
            chunks = self._stream(prompt, max_tokens, float(temperature))
            return StreamingResponse(
                _sse(chunks, ident, created, self.name, chat=chat),
                media_type="text/event-stream",
            )
        async with self._lock:
            text, prompt_tokens, completion_tokens = await asyncio.to_thread(
                self._complete, prompt, max_tokens, float(temperature)
            )
        choice: dict[str, Any] = {"index": 0, "finish_reason": "length"}
        if chat:
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice["text"] = text
        return JSONResponse(
            {
                "id": ident,
                "object": "chat.completion" if chat else "text_completion",
                "created": created,
                "model": self.name,
                "choices": [choice],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            }
        )

    def _generate_kwargs(self, prompt: str, max_tokens: int, temperature: float) -> dict[str, Any]:
        inputs = self.tokenizer(prompt, return_tensors="pt").to(self.device)
        sampling: dict[str, Any] = (
            {"do_sample": True, "temperature": temperature} if temperature > 0 else {}
        )
        if temperature <= 0:
            sampling["do_sample"] = False
        pad = self.tokenizer.pad_token_id
        if pad is None:
            pad = self.tokenizer.eos_token_id
        return {
            **inputs,
            **sampling,
            "max_new_tokens": max_tokens,
            "min_new_tokens": max_tokens,  # OpenAI's max_tokens: the test models never stop early
            "pad_token_id": pad,
        }

    def _complete(self, prompt: str, max_tokens: int, temperature: float) -> tuple[str, int, int]:
        import torch

        arguments = self._generate_kwargs(prompt, max_tokens, temperature)
        prompt_tokens = int(arguments["input_ids"].shape[1])
        with torch.no_grad():
            output = self.model.generate(**arguments)
        new = output[0][prompt_tokens:]
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        return text, prompt_tokens, int(new.shape[0])

    async def _stream(self, prompt: str, max_tokens: int, temperature: float) -> AsyncIterator[str]:
        """The new text piece by piece, as the model makes each token."""
        from transformers import TextIteratorStreamer

        async with self._lock:
            streamer = TextIteratorStreamer(
                self.tokenizer, skip_prompt=True, skip_special_tokens=True, timeout=300
            )
            arguments = self._generate_kwargs(prompt, max_tokens, temperature)
            thread = threading.Thread(
                target=self.model.generate, kwargs={**arguments, "streamer": streamer}, daemon=True
            )
            thread.start()
            pieces: Iterator[str] = iter(streamer)
            while True:
                piece = await asyncio.to_thread(next, pieces, None)
                if piece is None:
                    break
                if piece:
                    yield piece
            await asyncio.to_thread(thread.join)


async def _sse(
    pieces: AsyncIterator[str], ident: str, created: int, model: str, *, chat: bool
) -> AsyncIterator[str]:
    """OpenAI's streaming chunks as server-sent events, ending with ``[DONE]``."""
    kind = "chat.completion.chunk" if chat else "text_completion"

    def event(delta: str | None, finish: str | None) -> str:
        choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
        if chat:
            choice["delta"] = {} if delta is None else {"role": "assistant", "content": delta}
        else:
            choice["text"] = delta or ""
        chunk = {"id": ident, "object": kind, "created": created, "model": model}
        return f"data: {json.dumps(chunk | {'choices': [choice]})}\n\n"

    async for piece in pieces:
        yield event(piece, None)
    yield event(None, "length")
    yield "data: [DONE]\n\n"


class _BadRequest(ValueError):
    """A request this backend refuses (400, OpenAI's ``invalid_request_error``)."""


def _app(backend: TransformersBackend) -> Any:
    from starlette.applications import Starlette
    from starlette.routing import Route

    async def handle(request: Request) -> Response:
        return await backend.handle(request.method, request.url.path, request)

    return Starlette(
        routes=[Route("/{path:path}", handle, methods=["GET", "POST", "PUT", "DELETE"])]
    )


def main(argv: list[str] | None = None) -> int:
    """Load the model, then serve it on ``127.0.0.1:$PORT`` until the container ends."""
    parser = argparse.ArgumentParser(prog="gridweave_transformers")
    parser.add_argument("--model", required=True, type=Path, help="the model's directory")
    parser.add_argument("--name", required=True, help="the model's name in answers")
    arguments = parser.parse_args(argv)
    try:
        backend = TransformersBackend(arguments.name, arguments.model)
    except Exception as error:  # noqa: BLE001 (any failure to load is the replica's answer)
        message = f"the model could not be loaded: {type(error).__name__}: {error}"
        traceback.print_exc()
        try:
            Path(_SERVE_DIR, "failed.json").write_text(json.dumps({"message": message}))
        except OSError:
            pass
        return 1
    import uvicorn

    port = int(os.environ.get("PORT", "8000"))
    uvicorn.run(_app(backend), host="127.0.0.1", port=port, log_level="warning", access_log=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
