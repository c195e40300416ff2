"""Mode vllm: tokens per second through the platform against vLLM alone, same model, same run.

The stack is ``bench_endpoint_latency``'s (PostgreSQL, the Kubernetes API server, the
three-node Ray of the tests, credit, metering, the gateway serving on Ray Serve, the
platform as its own process). A vllm endpoint of the model is deployed through the SDK
(``GATEWAY_VLLM_PYTHON``: ``make vllm``'s virtualenv unless set; on a machine without a
GPU the CPU build, ``GATEWAY_VLLM_ALLOW_CPU``), and a second vLLM server of the same
interpreter, model and arguments is started alone on a loopback port. Then ``--rounds``
rounds, each one batch through the platform (``/v1/endpoints/{name}/v1/completions`` with
the API key: platform, Serve's proxy, the replica, vLLM) and one straight to the lone vLLM,
interleaved so both see the same machine: ``--requests`` completions of ``--max-tokens``
tokens each (``ignore_eos``: every answer is that long), ``--concurrency`` at a time,
streamed. Tokens per second is the batch's tokens over its wall time; the ratio is the
platform's median over vLLM's. The model is a tiny GPT-2 built here unless ``--model-dir``
names one; on a GPU node give a real model directory and ``--vllm-args ''``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

import gridweave as gw
from bench.bench_endpoint_latency import serving_stack
from bench.report import machine_line, write_section
from tests.platform_service.endpoint_factories import tiny_gpt2
from tests.support.http_server import free_port
from tests.support.vllm import find_vllm_python

LAUNCHER = Path(__file__).resolve().parents[1] / "job_gateway" / "endpoints" / "vllm_launcher.py"
CPU_ARGS = "--enforce-eager --max-model-len 256 --dtype float32"
NAME = "bench-vllm"


@dataclass(frozen=True)
class Figures:
    """Tokens per second of each batch, through the platform and straight to vLLM."""

    platform: list[float]
    alone: list[float]
    deploy_s: float
    alone_start_s: float


def _stream_tokens(http: httpx.Client, url: str, headers: dict[str, str], tokens: int) -> int:
    """One streamed completion; the tokens it brought (one event each)."""
    body = {
        "model": NAME,
        "prompt": "the quick brown fox",
        "max_tokens": tokens,
        "temperature": 0,
        "ignore_eos": True,
        "stream": True,
    }
    counted = 0
    with http.stream("POST", url, json=body, headers=headers) as answer:
        answer.raise_for_status()
        for line in answer.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                choices = json.loads(line[len("data: ") :]).get("choices") or []
                counted += sum(1 for c in choices if c.get("text"))
    return counted


def _batch(url: str, headers: dict[str, str], args: argparse.Namespace) -> float:
    """Tokens per second of ``--requests`` streamed completions, ``--concurrency`` at once."""
    with httpx.Client(timeout=600, trust_env=False) as http:
        started = time.perf_counter()
        with ThreadPoolExecutor(args.concurrency) as pool:
            tokens = sum(
                pool.map(
                    lambda _i: _stream_tokens(http, url, headers, args.max_tokens),
                    range(args.requests),
                )
            )
        return tokens / (time.perf_counter() - started)


@contextmanager
def vllm_alone(python: str, model_dir: Path, vllm_args: str) -> Iterator[tuple[str, float]]:
    """vLLM's OpenAI server of the model on a loopback port: (its URL, seconds to /health)."""
    port = free_port()
    env = dict(os.environ, HF_HUB_OFFLINE="1", VLLM_CPU_KVCACHE_SPACE="1")
    command = [python, str(LAUNCHER), "--model", str(model_dir), "--served-model-name", NAME]
    command += ["--host", "127.0.0.1", "--port", str(port), "--disable-uvicorn-access-log"]
    command += shlex.split(vllm_args)  # completions only: no chat template needed
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"vLLM alone exited with code {process.returncode}")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        yield url, time.monotonic() - started
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def measure(args: argparse.Namespace) -> Figures:
    python = args.vllm_python or find_vllm_python()
    os.environ.update(
        GATEWAY_VLLM_PYTHON=python,
        GATEWAY_VLLM_ALLOW_CPU="true",
        GATEWAY_VLLM_ARGS=args.vllm_args,
        GATEWAY_ENDPOINT_DEPLOY_TIMEOUT_SECONDS="900",
    )
    workdir = Path(tempfile.mkdtemp(prefix="gw-bench-vllm-"))
    for part in ("credit", "gateway", "platform"):
        (workdir / part).mkdir()
    try:
        # under the platform's model root (PLATFORM_MODEL_ROOTS, by default its state's models)
        model_dir = workdir / "platform" / "models" / "model"
        if args.model_dir is None:
            tiny_gpt2(model_dir, n_embd=64)
        else:
            model_dir.parent.mkdir(parents=True)
            model_dir.symlink_to(args.model_dir.resolve())
        with serving_stack(workdir) as (platform_url, api_key, _gateway):
            gw.configure(url=platform_url, api_key=api_key)
            started = time.monotonic()
            endpoint = gw.deploy(
                NAME, mode="vllm", model_ref=str(model_dir), vram="1GB", vendor="nvidia", idle=0
            )
            try:
                endpoint.wait_until_running(timeout=900)
                deploy_s = time.monotonic() - started
                with vllm_alone(python, Path(model_dir), args.vllm_args) as (alone_url, start_s):
                    proxied = f"{endpoint.openai_base_url}/completions"
                    direct = f"{alone_url}/v1/completions"
                    keyed = {"Authorization": f"Bearer {api_key}"}
                    _batch(proxied, keyed, args)  # warm both
                    _batch(direct, {}, args)
                    through: list[float] = []
                    alone: list[float] = []
                    for _ in range(args.rounds):
                        through.append(_batch(proxied, keyed, args))
                        alone.append(_batch(direct, {}, args))
            finally:
                endpoint.stop()
        return Figures(through, alone, deploy_s, start_s)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def report(figures: Figures, args: argparse.Namespace, device: str) -> str:
    platform = statistics.median(figures.platform)
    alone = statistics.median(figures.alone)
    rows = "\n".join(
        f"| {i + 1} | {p:.1f} | {a:.1f} | {p / a:.2f} |"
        for i, (p, a) in enumerate(zip(figures.platform, figures.alone, strict=True))
    )
    return f"""## Mode vllm: tokens per second through the platform vs vLLM alone ({device})

`python -m bench.bench_vllm` ({args.rounds} rounds of {args.requests} streamed completions
of {args.max_tokens} tokens, {args.concurrency} at a time, through the platform and straight
to a second vLLM of the same model, interleaved; vLLM arguments `{args.vllm_args}`).
{machine_line()}. Model: {
        "a tiny GPT-2 built by the benchmark (2 layers, n_embd 64)"
        if args.model_dir is None
        else args.model_dir
    }.

| round | platform tok/s | vLLM alone tok/s | ratio |
| --- | --- | --- | --- |
{rows}

Median: {platform:.1f} tok/s through the platform, {alone:.1f} tok/s alone, ratio
{platform / alone:.2f}. Deploy to Running through the SDK {figures.deploy_s:.0f} s; vLLM
alone to `/health` {figures.alone_start_s:.0f} s.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--model-dir", type=Path)
    parser.add_argument("--vllm-python", help="default: GATEWAY_VLLM_PYTHON, else make vllm's")
    parser.add_argument("--vllm-args", default=CPU_ARGS)
    parser.add_argument("--device", default="CPU", help="what the report calls the machine")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args()
    figures = measure(args)
    section = report(figures, args, args.device)
    print(section)
    if not args.no_write:
        write_section("bench_vllm", section)


if __name__ == "__main__":
    main()
