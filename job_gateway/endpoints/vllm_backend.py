"""The ``vllm`` mode: vLLM's OpenAI-compatible server as the replica's child, proxied.

Imported only inside a Serve replica. vLLM lives in a virtualenv of its own
(``GATEWAY_VLLM_PYTHON``; its torch is pinned apart from Gridweave's), so the replica runs
vLLM's OpenAI server with that interpreter, through ``vllm_launcher.py`` (which ends vLLM with
the replica), on a loopback port of the replica's node. vLLM sees the GPUs the gateway
chose (the replica has set ``CUDA_VISIBLE_DEVICES`` / ``HIP_VISIBLE_DEVICES`` before this
runs) and may use the endpoint's share of their memory (``--gpu-memory-utilization``); the
model directory is resolved as in the transformers mode (a local path, or an archive from
object storage) and no model hub is asked (``HF_HUB_OFFLINE``).

The constructor returns once vLLM's ``/health`` answers; a vLLM that exits first fails the
deployment with its last lines of output. OpenAI's routes are then proxied, a stream
(server-sent events) chunk by chunk as vLLM writes it. As in the transformers mode the
endpoint's model answers whatever ``model`` the caller names. Serve's health check asks
vLLM's ``/health``: a vLLM that died or stopped answering fails it and Serve replaces the
replica.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from job_gateway.endpoints.model_dir import resolve_model_dir
from job_gateway.endpoints.replica import ReplicaConfig, VllmLaunch, error_response

__all__ = ["VllmBackend", "vllm_command"]

_LAUNCHER = Path(__file__).with_name("vllm_launcher.py")
#: OpenAI's routes a vllm endpoint answers, with their method (as the transformers mode).
_ROUTES = {
    "/v1/models": "GET",
    "/v1/completions": "POST",
    "/v1/chat/completions": "POST",
    "/v1/embeddings": "POST",
}
#: The chat prompt of a tokenizer without a template: the transformers mode's own.
_PLAIN_CHAT_TEMPLATE = (
    "{%- for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor -%}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)
#: The replica's own Python settings, which vLLM's interpreter must not read.
_NOT_INHERITED = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "RAY_ADDRESS")
_OUTPUT_LINES = 40
_DEFAULT_MAX_TOKENS = 16
_STOP_SECONDS = 10.0


def vllm_command(
    launch: VllmLaunch, model_dir: Path, *, name: str, port: int, chat_template: Path | None
) -> list[str]:
    """vLLM's OpenAI server of the model on ``127.0.0.1:port``, named as the endpoint's."""
    command = [
        launch.python,
        str(_LAUNCHER),
        "--model",
        str(model_dir),
        "--served-model-name",
        name,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--disable-uvicorn-access-log",  # the probe's calls would bury vLLM's own lines
    ]
    if chat_template is not None:
        command += ["--chat-template", str(chat_template)]
    if launch.gpu_memory_fraction is not None:
        command += ["--gpu-memory-utilization", f"{launch.gpu_memory_fraction:.4f}"]
    return command + list(launch.args)


class VllmBackend:
    """vLLM's server for the endpoint's model, started, waited for, proxied, probed."""

    def __init__(self, config: ReplicaConfig, *, read_object: Callable[[str], bytes]) -> None:
        if config.vllm is None:
            raise RuntimeError("a vllm endpoint needs GATEWAY_VLLM_PYTHON on the gateway")
        self.name = config.model or config.endpoint_id
        model_dir = resolve_model_dir(config.model_ref or config.model, read_object)
        self._workdir = Path(tempfile.mkdtemp(prefix=f"gw-vllm-{config.endpoint_id}-"))
        port = _free_port()
        self.base_url = f"http://127.0.0.1:{port}"
        command = vllm_command(
            config.vllm,
            model_dir,
            name=self.name,
            port=port,
            chat_template=self._chat_template(model_dir),
        )
        self._output: deque[str] = deque(maxlen=_OUTPUT_LINES)
        self.process = subprocess.Popen(
            command,
            env=_environment(config.vllm),
            cwd=self._workdir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            encoding="utf-8",
            errors="replace",
            start_new_session=True,  # its own process group: vLLM's engines end with it
        )
        threading.Thread(target=self._relay_output, daemon=True).start()
        try:
            self._wait_until_serving()
        except BaseException:
            self.close()
            raise
        self._http = httpx.AsyncClient(
            base_url=self.base_url, timeout=httpx.Timeout(None, connect=10.0), trust_env=False
        )

    def _chat_template(self, model_dir: Path) -> Path | None:
        """The transformers mode's plain prompt for a tokenizer that has no template."""
        if (model_dir / "chat_template.jinja").is_file() or (
            model_dir / "chat_template.json"
        ).is_file():
            return None
        with contextlib.suppress(OSError, ValueError):
            tokenizer = json.loads((model_dir / "tokenizer_config.json").read_text())
            if isinstance(tokenizer, dict) and tokenizer.get("chat_template"):
                return None
        template = self._workdir / "chat_template.jinja"
        template.write_text(_PLAIN_CHAT_TEMPLATE)
        return template

    def _relay_output(self) -> None:
        """vLLM's lines to the replica's stderr (its logs) and the last few kept."""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._output.append(line.rstrip("\n"))
            sys.stderr.write(line)
        sys.stderr.flush()

    def _last_output(self) -> str:
        time.sleep(0.2)  # the relay's last lines
        return "\n".join(self._output)[-3000:]

    def _wait_until_serving(self) -> None:
        """Until ``/health`` answers 200 (the reconciler's deploy timeout bounds it)."""
        with httpx.Client(base_url=self.base_url, timeout=2.0, trust_env=False) as http:
            while True:
                code = self.process.poll()
                if code is not None:
                    raise RuntimeError(
                        f"vLLM exited with code {code} before it served:\n{self._last_output()}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if http.get("/health").status_code == 200:
                        return
                time.sleep(0.5)

    async def check_health(self) -> None:
        """Raise unless vLLM runs and its ``/health`` answers 200 (Serve's health check)."""
        code = self.process.poll()
        if code is not None:
            raise RuntimeError(f"vLLM exited with code {code}:\n{self._last_output()}")
        try:
            answer = await self._http.get("/health", timeout=20.0)
        except httpx.HTTPError as error:
            raise RuntimeError(f"vLLM's /health did not answer: {error!r}") from error
        if answer.status_code != 200:
            raise RuntimeError(f"vLLM's /health answered {answer.status_code}")

    async def handle(self, method: str, path: str, request: Request) -> Response:
        """OpenAI's routes, proxied to vLLM; a stream passes through as it comes."""
        expected = _ROUTES.get(path)
        if expected is None:
            return error_response(404, "not_found", f"no route {path}")
        if method != expected:
            return error_response(405, "method_not_allowed", f"{path} takes {expected}")
        body = await request.body()
        if method == "POST":
            body = self._as_endpoints_model(body, generation=path != "/v1/embeddings")
        upstream = self._http.build_request(
            method,
            path,
            content=body,
            headers={
                "content-type": "application/json",
                "accept": request.headers.get("accept", "*/*"),
            },
        )
        try:
            answer = await self._http.send(upstream, stream=True)
        except httpx.HTTPError as error:
            return error_response(503, "unavailable", f"vLLM did not answer: {error!r}")
        media_type = answer.headers.get("content-type", "application/json")
        if media_type.startswith("text/event-stream"):
            return StreamingResponse(
                _passed_through(answer), status_code=answer.status_code, media_type=media_type
            )
        try:
            content = await answer.aread()
        finally:
            await answer.aclose()
        return Response(content, status_code=answer.status_code, media_type=media_type)

    def _as_endpoints_model(self, body: bytes, *, generation: bool) -> bytes:
        """The body naming the endpoint's model (vLLM refuses any other name), a generation
        with the transformers mode's defaults (greedy, 16 tokens); a body that is no JSON
        object goes as it is, for vLLM to refuse."""
        try:
            parsed = json.loads(body or b"{}")
        except ValueError:
            return body
        if not isinstance(parsed, dict):
            return body
        parsed["model"] = self.name
        if generation:
            parsed.setdefault("temperature", 0)
            if "max_tokens" not in parsed and "max_completion_tokens" not in parsed:
                parsed["max_tokens"] = _DEFAULT_MAX_TOKENS
        return json.dumps(parsed).encode()

    def close(self) -> None:
        """Stop vLLM and its engines (SIGTERM, then SIGKILL), and remove the work files."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                pass
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(_STOP_SECONDS)
        shutil.rmtree(self._workdir, ignore_errors=True)


async def _passed_through(answer: httpx.Response) -> AsyncIterator[bytes]:
    """vLLM's stream, each chunk as it arrives; closed when the caller goes."""
    try:
        async for chunk in answer.aiter_raw():
            yield chunk
    finally:
        await answer.aclose()


def _environment(launch: VllmLaunch) -> dict[str, str]:
    """The replica's environment (its GPUs included) for vLLM: offline, no usage report."""
    environment = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
    environment.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        VLLM_NO_USAGE_STATS="1",
        DO_NOT_TRACK="1",
        VLLM_CPU_KVCACHE_SPACE=str(launch.cpu_kv_cache_gib),
    )
    return environment


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
