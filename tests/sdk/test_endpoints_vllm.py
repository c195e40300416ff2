"""Mode vllm end to end on CPU: vLLM's CPU build (its own virtualenv, ``make vllm``) served
by a Ray Serve replica of the real gateway, called through the platform with OpenAI's client.

The stack is the SDK tests' (platform, credit, metering on PostgreSQL, the gateway on the
real apiserver and the session's three-node Ray, simulated GPUs); the gateway serves vllm
on CPU (``GATEWAY_VLLM_ALLOW_CPU``). No virtualenv with vLLM: the module skips, and fails
under CI=true (``make test`` builds it first). vLLM takes one to three minutes to start
here, so one deployment carries the calls, the crash and the stop.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import openai
import pytest

import gridweave as gw
from tests.job_gateway.execution_factories import RayWorld
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.endpoint_factories import tiny_gpt2
from tests.platform_service.factories import PlatformServer, User
from tests.sdk.serving_factories import sdk_user, serving_gateway
from tests.support.credit_server import CreditServer
from tests.support.kubeapi import KubeAPI
from tests.support.unavailable import fail_or_skip
from tests.support.vllm import VllmUnavailable, find_vllm_python

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

#: Eager mode (no compilation: a minute less to start) and a short context for the test model.
VLLM_ARGS = "--enforce-eager --max-model-len 256 --dtype float32"
START_S = 600.0


@pytest.fixture(scope="module")
def vllm_python() -> str:
    try:
        return find_vllm_python()
    except VllmUnavailable as exc:
        fail_or_skip("vLLM virtualenv (make vllm)", exc)


@pytest.fixture(scope="module")
def gateway(
    vllm_python: str,
    ray_world: RayWorld,
    kubeapi: KubeAPI,
    metering: httpx.Client,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[GatewayServer]:
    """The real gateway serving endpoints on Ray Serve, vllm on CPU from vLLM's virtualenv."""
    with serving_gateway(
        ray_world,
        kubeapi,
        metering,
        tmp_path_factory,
        name="gateway-vllm",
        environment={
            "GATEWAY_ENDPOINT_PROBE_SECONDS": "0.5",
            "GATEWAY_ENDPOINT_DEPLOY_TIMEOUT_SECONDS": str(START_S),
            "GATEWAY_VLLM_PYTHON": vllm_python,
            "GATEWAY_VLLM_ALLOW_CPU": "true",
            "GATEWAY_VLLM_ARGS": VLLM_ARGS,
        },
    ) as server:
        yield server


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2-vllm"), n_embd=64)


@pytest.fixture
def user(platform: PlatformServer, credit: CreditServer) -> Iterator[User]:
    """A funded user as the SDK's user."""
    with sdk_user(platform, credit, 10**9) as funded:
        yield funded


def vllm_groups(model_dir: Path) -> set[int]:
    """Process groups of the vLLM servers of ``model_dir`` on this machine (the replica's
    launcher leads each)."""
    groups = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            group = os.getpgid(int(entry.name))
        except (OSError, ProcessLookupError):
            continue
        words = [part.decode(errors="replace") for part in command]
        if any(w.endswith("vllm_launcher.py") for w in words) and str(model_dir) in words:
            groups.add(group)
    return groups


def wait_for(condition: str, check: Callable[[], bool], timeout: float = START_S) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {condition}"
        time.sleep(0.5)


def data_events(response: httpx.Response) -> list[str]:
    return [line[len("data: ") :] for line in response.iter_lines() if line.startswith("data: ")]


class TestVllm:
    @pytest.mark.timeout(3 * START_S)
    def test_openai_client_through_the_platform_then_a_crash_and_a_stop(
        self, user: User, model_dir: Path
    ) -> None:
        endpoint = gw.deploy(
            "tiny-vllm", mode="vllm", model_ref=str(model_dir), vram="1GB", vendor="nvidia", idle=0
        )
        client = openai.OpenAI(base_url=endpoint.openai_base_url, api_key=user.key, max_retries=0)
        try:
            endpoint.wait_until_running(timeout=START_S)
            assert len(vllm_groups(model_dir)) == 1

            completion = client.completions.create(model="any", prompt="Hello", max_tokens=5)
            assert completion.model.startswith("tiny-vllm")  # the endpoint's, whatever was named
            assert completion.usage is not None and completion.usage.completion_tokens <= 5
            said = client.chat.completions.create(
                model="tiny-vllm", messages=[{"role": "user", "content": "Hi"}], max_tokens=6
            )
            assert said.choices[0].message.role == "assistant"
            assert said.system_fingerprint is not None and "vllm" in said.system_fingerprint
            chunks = list(
                client.chat.completions.create(
                    model="tiny-vllm",
                    messages=[{"role": "user", "content": "Hi"}],
                    max_tokens=6,
                    stream=True,
                )
            )
            assert chunks[-1].choices[0].finish_reason is not None
            streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            assert streamed == said.choices[0].message.content  # greedy by default
            # the stream as the platform passes it: server-sent events, then the usage and
            # [DONE]. vLLM merges tokens into one event when its reader lags, so the events
            # are counted by their text and the usage, not one per token.
            whole = client.completions.create(
                model="tiny-vllm", prompt="Hello", max_tokens=4, extra_body={"ignore_eos": True}
            )
            with httpx.stream(
                "POST",
                f"{endpoint.openai_base_url}/completions",
                json={
                    "prompt": "Hello",
                    "max_tokens": 4,
                    "ignore_eos": True,
                    "stream": True,
                    "stream_options": {"include_usage": True},
                },
                headers={"Authorization": f"Bearer {user.key}"},
                timeout=120,
            ) as answer:
                assert answer.headers["content-type"].startswith("text/event-stream")
                events = data_events(answer)
            assert events[-1] == "[DONE]"
            parts = [json.loads(event) for event in events[:-1]]
            assert parts[-1]["usage"]["completion_tokens"] == 4
            text = "".join(choice["text"] for part in parts for choice in part["choices"])
            assert text == whole.choices[0].text  # greedy: the same four tokens
            missing = httpx.get(
                f"{endpoint.url}/v1/nowhere", headers={"Authorization": f"Bearer {user.key}"}
            )
            assert missing.status_code == 404

            # vLLM dies: Serve's health check fails, the replica is replaced, vLLM restarts
            (group,) = vllm_groups(model_dir)
            os.killpg(group, signal.SIGKILL)
            wait_for("Unhealthy", lambda: endpoint.status().health == "Unhealthy", 120)
            wait_for("Healthy again", lambda: endpoint.status().health == "Healthy")
            assert vllm_groups(model_dir) - {group}
            again = client.completions.create(model="tiny-vllm", prompt="Hello", max_tokens=3)
            assert again.choices[0].text is not None
        finally:
            client.close()
            endpoint.stop()
        wait_for("vLLM gone with its replica", lambda: not vllm_groups(model_dir), 120)


class TestRefused:
    def test_a_model_name_without_its_directory_is_a_422_naming_model_ref(
        self, platform: PlatformServer, user: User
    ) -> None:
        """No model hub: vllm needs the directory (the platform passes the gateway's 422)."""
        answer = httpx.post(
            f"{platform.url}/v1/endpoints",
            json={
                "name": "hub-vllm",
                "mode": "vllm",
                "model": "qwen2.5-0.5b-instruct",  # an id, no path: a hub name
                "vram_mb": 1024,
            },
            headers=user.headers,
        )
        assert answer.status_code == 422, answer.text
        fields = answer.json()["error"]["fields"]
        assert fields[0]["field"].endswith("model_ref") and "model hub" in fields[0]["message"]
