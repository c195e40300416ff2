"""Endpoints in their owners' images, end to end on CPU: an image pushed to the real registry
serves OpenAI's API to OpenAI's own client through the platform; a class runs in its
owner's image; another user's private image is refused before anything is held. The
gateway executes on the session's Ray and serves on Ray Serve; each replica's code runs in
a container of its own (runc), pulled with its owner's token."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

import gridweave as gw
from gridweave_clients.errors import ServiceRefused
from tests.job_gateway.execution_factories import RayWorld
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.factories import (
    PlatformServer,
    User,
    platform_settings,
    running_platform,
)
from tests.sdk.serving_factories import sdk_user, serving_gateway
from tests.support.credit_server import CreditServer
from tests.support.http_server import free_port
from tests.support.job_images import JobImages, registry_beside, registry_tools_or_skip
from tests.support.kubeapi import KubeAPI

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres, pytest.mark.timeout(600)]

FUNDS = 10**9
#: An OpenAI-compatible server of the image's own (the standard library only), on $PORT.
OPENAI_SERVER = b"""
import json, os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MARKER = open("/app/marker.txt").read().strip()

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _json(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/v1/models":
            self._json({"object": "list", "data": [
                {"id": "image-model", "object": "model", "created": 0, "owned_by": "me"}]})
        else:
            self._json({"ok": True})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        asked = json.loads(self.rfile.read(length) or b"{}")
        said = asked["messages"][-1]["content"]
        self._json({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0,
            "model": asked.get("model", "image-model"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": f"{MARKER}: {said}"}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        })

ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
"""


@pytest.fixture(scope="module")
def ports() -> dict[str, int]:
    """The platform's and the registry's ports, chosen before either starts (the gateway,
    started first, names both)."""
    return {"platform": free_port(), "registry": free_port()}


@pytest.fixture(scope="module")
def gateway(
    ray_world: RayWorld,
    kubeapi: KubeAPI,
    metering: httpx.Client,
    tmp_path_factory: pytest.TempPathFactory,
    ports: dict[str, int],
) -> Iterator[GatewayServer]:
    """The gateway executing on the session's Ray and serving on Ray Serve, pulling
    endpoints' images from the registry with tokens from the platform."""
    with serving_gateway(
        ray_world,
        kubeapi,
        metering,
        tmp_path_factory,
        name="gateway-images",
        environment={
            "GATEWAY_ENDPOINT_PROBE_SECONDS": "0.2",
            "GATEWAY_PLATFORM_URL": f"http://127.0.0.1:{ports['platform']}",
            "GATEWAY_REGISTRY_ADDRESS": f"127.0.0.1:{ports['registry']}",
        },
    ) as server:
        yield server


@pytest.fixture(scope="module")
def images(
    platform_database: str,
    credit: CreditServer,
    gateway: GatewayServer,
    metering: httpx.Client,
    tmp_path_factory: pytest.TempPathFactory,
    ports: dict[str, int],
) -> Iterator[JobImages]:
    """The platform on the chosen port, calling the services, and the registry beside it."""
    registry_tools_or_skip()
    workdir = tmp_path_factory.mktemp("endpoint-images")
    settings = platform_settings(
        platform_database,
        workdir / "platform",
        credit_service_url=credit.url,
        gateway_url=gateway.url,
        metering_service_url=str(metering.base_url),
        storage_dir=gateway.storage_dir,
        registry_url=f"http://127.0.0.1:{ports['registry']}",
    )
    with (
        running_platform(settings, port=ports["platform"]) as platform,
        registry_beside(platform, settings, workdir) as images,
    ):
        yield images


@pytest.fixture(scope="module")
def platform(images: JobImages) -> PlatformServer:
    return images.platform


@pytest.fixture
def user(platform: PlatformServer, credit: CreditServer) -> Iterator[User]:
    with sdk_user(platform, credit, FUNDS) as funded:
        yield funded


class TestEndpointImages:
    def test_an_image_serves_openais_client_from_its_own_server(
        self, images: JobImages, platform: PlatformServer, user: User
    ) -> None:
        repository = f"{user.user_id}/openai-server"
        digest = images.push_image(
            user,
            repository,
            {"app/server.py": OPENAI_SERVER, "app/marker.txt": b"from the image\n"},
            command=["python3", "/app/server.py"],
        )
        endpoint = gw.deploy("image-chat", image=f"{repository}:v1", vram="1GB")
        running = endpoint.wait_until_running(timeout=300)
        assert running.image == f"{repository}@{digest}"
        client = openai.OpenAI(base_url=endpoint.openai_base_url, api_key=user.key)
        assert [model.id for model in client.models.list()] == ["image-model"]
        answer = client.chat.completions.create(
            model="image-model", messages=[{"role": "user", "content": "hello"}]
        )
        assert answer.choices[0].message.content == "from the image: hello"
        endpoint.stop()

    def test_a_class_runs_in_its_owners_image(self, images: JobImages, user: User) -> None:
        repository = f"{user.user_id}/tools"
        images.push_image(user, repository, {"opt/tools/marker.txt": b"tools v1\n"})

        class Reader:
            def read(self, path: str) -> str | None:
                try:
                    with open(path) as handle:
                        return handle.read()
                except OSError:
                    return None

        deployable = gw.endpoint(vram="1GB", image=f"{repository}:v1")(Reader)
        endpoint = deployable.deploy("reader")
        endpoint.wait_until_running(timeout=300)
        assert endpoint.read("/opt/tools/marker.txt") == "tools v1\n"
        assert endpoint.read("/etc/gridweave/secret") is None
        endpoint.stop()

    def test_another_users_private_image_is_refused_before_anything_is_held(
        self, images: JobImages, platform: PlatformServer, credit: CreditServer, user: User
    ) -> None:
        owner = platform.new_user()
        repository = f"{owner.user_id}/private"
        images.push_image(owner, repository, {"p.txt": b"p"})
        before: dict[str, Any] = credit.account(user.user_id)
        with pytest.raises(ServiceRefused) as refused:
            gw.deploy("borrowed", image=f"{repository}:v1", vram="1GB")
        assert refused.value.status_code == 403 and refused.value.code == "image_refused"
        assert credit.account(user.user_id) == before
        listed = platform.http.get("/v1/endpoints", headers=user.headers).json()["endpoints"]
        assert all(endpoint["name"] != "borrowed" for endpoint in listed)
