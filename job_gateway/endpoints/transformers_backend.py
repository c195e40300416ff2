"""The ``transformers`` mode: OpenAI's routes over Hugging Face transformers, in a replica.

Imported only inside a Serve replica (torch and transformers are never loaded by the
gateway). The model directory comes from ``spec.modelRef`` (a local directory, or an
object-storage URI of a ``.tar``/``.zip`` archive of one) or ``spec.model`` when that names
a local directory: nothing is fetched from a model hub. A directory holding a
sentence-transformers model (``modules.json``) serves ``/v1/embeddings``; any other causal
language model serves ``/v1/completions`` and ``/v1/chat/completions``, streamed as
server-sent events token by token when ``stream`` is true.
"""

from __future__ import annotations

import asyncio
import io
import json
import tarfile
import tempfile
import threading
import time
import uuid
import zipfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from job_gateway.endpoints.replica import ReplicaConfig, error_response

__all__ = ["TransformersBackend", "resolve_model_dir"]

_MAX_TOKENS = 4096


def resolve_model_dir(config: ReplicaConfig, read_object: Callable[[str], bytes]) -> Path:
    """The local directory of the model: a path as given, or an archive unpacked."""
    ref = config.model_ref or config.model
    if ref is None:
        raise RuntimeError("a transformers endpoint needs modelRef or a model directory")
    local = Path(ref.removeprefix("file://"))
    if local.is_dir():
        return local
    if "://" not in ref:
        raise RuntimeError(f"the model directory {ref!r} does not exist")
    data = read_object(ref)
    target = Path(tempfile.mkdtemp(prefix=f"gw-model-{config.endpoint_id}-"))
    if zipfile.is_zipfile(io.BytesIO(data)):
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            archive.extractall(target)
    else:
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            archive.extractall(target, filter="data")
    entries = [p for p in target.iterdir() if not p.name.startswith(".")]
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else target


class TransformersBackend:
    """A causal language model (completions, chat) or a sentence model (embeddings)."""

    def __init__(self, config: ReplicaConfig, *, read_object: Callable[[str], bytes]) -> None:
        import torch

        self.name = config.model or config.endpoint_id
        directory = resolve_model_dir(config, read_object)
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
