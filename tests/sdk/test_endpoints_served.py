"""Endpoints end to end on CPU: the SDK and OpenAI's client through the platform, the gateway
serving on Ray Serve on the session's three-node Ray, billing on the real credit_service
and metering_service.

The stack is the platform tests' (platform, credit, metering, faucet on PostgreSQL, the
gateway on the real apiserver) with the gateway executing on the execution tests' Ray
(simulated GPUs). Models are built by the test (a tiny GPT-2, in seconds); a custom
endpoint is a class of the tests, pickled by value as a user's own module would be.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import cloudpickle
import httpx
import openai
import pytest

import gridweave as gw
from gridweave_clients.gateway import AsyncGatewayClient
from gridweave_clients.gateway import endpoints as gateway_ops
from gridweave_clients.gateway.endpoints import StopEndpointRequest
from gridweave_clients.metering import AsyncMeteringClient
from gridweave_clients.metering.price_source import FixedPrices
from gridweave_clients.metering.pricing import DEFAULT_PRICE_TABLE, price_per_gpu_second
from job_gateway.endpoint_billing import EndpointBilling
from tests.job_gateway.execution_factories import RayWorld
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service import endpoint_factories
from tests.platform_service.endpoint_factories import Greeter, tiny_gpt2
from tests.platform_service.factories import PlatformServer, User
from tests.sdk.serving_factories import sdk_user, serving_gateway
from tests.support.credit_server import INTERNAL_TOKEN, CreditServer
from tests.support.kubeapi import KubeAPI

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

FUNDS = 10**9
#: Running seconds are billed per minute-long period (the default).
PERIOD = 60
NVIDIA_1G = price_per_gpu_second(DEFAULT_PRICE_TABLE, vendor="nvidia", vram_mb=1024)


@pytest.fixture(scope="module")
def gateway(
    ray_world: RayWorld,
    kubeapi: KubeAPI,
    metering: httpx.Client,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[GatewayServer]:
    """The real gateway executing on the session's Ray and serving endpoints on Ray Serve,
    probing every 0.2 s (the platform fixture uses it)."""
    with serving_gateway(
        ray_world,
        kubeapi,
        metering,
        tmp_path_factory,
        name="gateway-serve",
        environment={"GATEWAY_ENDPOINT_PROBE_SECONDS": "0.2"},
    ) as server:
        yield server


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2"))


@pytest.fixture
def user(platform: PlatformServer, credit: CreditServer) -> Iterator[User]:
    """A funded user as the SDK's user; the tests' classes pickled by value."""
    with sdk_user(platform, credit, FUNDS) as funded:
        yield funded


@contextmanager
def billing_running(gateway: GatewayServer, metering: httpx.Client) -> Iterator[None]:
    """A second billing loop besides the gateway's own (every 0.2 s, in a thread of its own,
    reading and stopping through the gateway's API): the two never charge a period twice."""
    stop = threading.Event()

    async def main() -> None:
        async with (
            AsyncMeteringClient(str(metering.base_url), INTERNAL_TOKEN, role="gateway") as m,
            AsyncGatewayClient(gateway.url, INTERNAL_TOKEN, role="platform") as g,
        ):

            async def stop_endpoint(endpoint_id: str, reason: str, message: str) -> None:
                request = StopEndpointRequest(reason=reason, message=message[:1024])
                await g.run(gateway_ops.stop_endpoint(endpoint_id, request))

            billing = EndpointBilling(
                m,
                prices=FixedPrices(DEFAULT_PRICE_TABLE),
                stop=stop_endpoint,
                period_seconds=PERIOD,
            )
            while not stop.is_set():
                for view in (await g.run(gateway_ops.list_endpoints())).endpoints:
                    billing.observe(view)
                await billing.settle()
                await asyncio.sleep(0.2)

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(30)


def free_vram(gateway: GatewayServer, node: str, index: int) -> int:
    """Free MiB of one GPU in the gateway's allocation map."""
    inventory = gateway.http.get(
        "/v1/inventory", headers={"Authorization": f"Bearer {INTERNAL_TOKEN}"}
    ).json()
    (free,) = [
        gpu["free_mb"]
        for listed in inventory["nodes"]
        if listed["name"] == node
        for gpu in listed["gpus"]
        if gpu["index"] == index
    ]
    return int(free)


def wait_for(condition: str, check: Callable[[], bool], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {condition}"
        time.sleep(0.1)


class TestTransformers:
    def test_openai_client_completions_chat_and_a_stream(self, user: User, model_dir: Path) -> None:
        endpoint = gw.deploy("tiny", model_ref=str(model_dir), vram="1GB", vendor="nvidia", idle=0)
        endpoint.wait_until_running(timeout=300)
        client = openai.OpenAI(base_url=endpoint.openai_base_url, api_key=user.key, max_retries=0)
        try:
            completion = client.completions.create(model="tiny", prompt="Hello", max_tokens=5)
            assert completion.choices[0].text is not None
            chat = client.chat.completions.create(
                model="tiny", messages=[{"role": "user", "content": "Hi"}], max_tokens=5
            )
            assert chat.choices[0].message.role == "assistant"
            chunks = list(
                client.chat.completions.create(
                    model="tiny",
                    messages=[{"role": "user", "content": "Hi"}],
                    max_tokens=8,
                    stream=True,
                )
            )
            assert len(chunks) >= 2  # token by token, then the finish
            assert chunks[-1].choices[0].finish_reason is not None
        finally:
            client.close()
            endpoint.stop()


class TestCustom:
    def test_a_class_deployed_through_the_sdk_answers_its_methods(self, user: User) -> None:
        endpoint = gw.endpoint(vram="1GB", vendor="nvidia", idle=0)(Greeter).deploy("greeter")
        endpoint.wait_until_running(timeout=300)
        try:
            assert endpoint.greet("ada") == "hello, ada"
            assert endpoint.call("add", a=2, b=3) == 5
            with pytest.raises(gw.EndpointCallFailed) as failed:
                endpoint.call("missing")
            assert failed.value.status_code == 404
        finally:
            endpoint.stop()

    def test_another_users_endpoint_is_not_found(
        self, user: User, platform: PlatformServer
    ) -> None:
        endpoint = gw.endpoint(vram="1GB", vendor="nvidia", idle=0)(Greeter).deploy("mine")
        other = platform.new_user()
        try:
            for method, path in (
                ("GET", "/v1/endpoints/mine"),
                ("POST", "/v1/endpoints/mine/greet"),
                ("DELETE", "/v1/endpoints/mine"),
            ):
                response = platform.http.request(method, path, headers=other.headers, json=["x"])
                assert response.status_code == 404, (method, path, response.text)
            listed = platform.http.get("/v1/endpoints", headers=other.headers).json()
            assert listed == {"endpoints": []}
            assert endpoint.status().phase != "Stopped"  # the other user's delete did nothing
        finally:
            endpoint.stop()


class TestScaleToZero:
    def test_ten_calls_to_a_scaled_to_zero_endpoint_all_succeed(self, user: User) -> None:
        endpoint = gw.endpoint(vram="1GB", vendor="nvidia", idle=2)(Greeter).deploy("sleepy")
        try:
            endpoint.wait_until_running(timeout=300)
            assert endpoint.greet("first") == "hello, first"

            def scaled_to_zero() -> bool:
                status = endpoint.status()
                return status.phase == "Stopped" and status.reason == "Idle"

            wait_for("scale to zero", scaled_to_zero)
            with ThreadPoolExecutor(max_workers=10) as pool:
                answers = list(pool.map(lambda i: endpoint.call("add", i, 1), range(10)))
            assert answers == [i + 1 for i in range(10)]
            assert endpoint.status().phase == "Running"
        finally:
            endpoint.stop()


class TestBilling:
    def test_a_stopped_endpoint_frees_its_vram_and_is_settled_exactly_once(
        self,
        user: User,
        gateway: GatewayServer,
        credit: CreditServer,
        metering: httpx.Client,
    ) -> None:
        with billing_running(gateway, metering):
            endpoint = gw.endpoint(vram="1GB", vendor="nvidia", idle=0)(Greeter).deploy("billed")
            running = endpoint.wait_until_running(timeout=300)
            assert running.node is not None
            node, index = running.node, running.gpu_indices[0]
            held = free_vram(gateway, node, index)
            wait_for("the holds", lambda: credit.account(user.user_id)["held"] > 0)
            time.sleep(1.5)
            stopped = endpoint.stop()
            assert stopped.phase == "Stopped"
            wait_for(
                "the VRAM freed",
                lambda: free_vram(gateway, node, index) == held + running.vram_mb,
            )
            wait_for("the settlement", lambda: credit.account(user.user_id)["held"] == 0)
            time.sleep(1.0)  # more passes: nothing more is charged
        final = endpoint.status()
        assert final.started_at and final.stopped_at
        seconds = -(-(final.stopped_at - final.started_at).total_seconds() // 1)
        charged = FUNDS - credit.account(user.user_id)["balance"]
        assert charged == int(seconds) * NVIDIA_1G
        records = metering.get("/v1/usage", params={"user_id": user.user_id}).json()["records"]
        assert len(records) == 1 and records[0]["endpoint_id"] == final.endpoint_id

    def test_running_out_of_credits_stops_the_endpoint_and_says_so(
        self,
        platform: PlatformServer,
        gateway: GatewayServer,
        credit: CreditServer,
        metering: httpx.Client,
    ) -> None:
        poor = platform.new_user()
        credit.fund(poor.user_id, 2 * PERIOD * NVIDIA_1G)  # the first two holds: accepted
        gw.configure(url=platform.url, api_key=poor.key)
        cloudpickle.register_pickle_by_value(endpoint_factories)
        try:
            with billing_running(gateway, metering):
                endpoint = gw.endpoint(vram="1GB", vendor="nvidia", idle=0)(Greeter).deploy("poor")
                # the owner spends one period elsewhere before it runs: one period, not two
                credit.place_hold(poor.user_id, PERIOD * NVIDIA_1G, f"elsewhere-{poor.user_id}")

                def out_of_credits() -> bool:
                    status = endpoint.status()
                    return status.phase == "Stopped" and status.reason == "OutOfCredits"

                wait_for("the OutOfCredits stop", out_of_credits, timeout=300)
            response = platform.http.post(
                "/v1/endpoints/poor/greet", json=["x"], headers=poor.headers
            )
            assert response.status_code == 402, response.text
            assert response.json()["error"]["code"] == "endpoint_out_of_credits"
        finally:
            cloudpickle.unregister_pickle_by_value(endpoint_factories)
