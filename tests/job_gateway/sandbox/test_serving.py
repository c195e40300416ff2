"""An endpoint replica's container on the real runtime (runc) and the default image: the
user's class, or the image's own server, served on a Unix socket and nothing else; its
errors and its end told apart; nothing left once it is closed."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import cloudpickle
import httpx
import pytest

from job_gateway.sandbox.attempt import SandboxedJob, container_spec
from job_gateway.sandbox.container import ContainerSpec
from job_gateway.sandbox.serving import ServingContainer, ServingFailed
from job_gateway.sandbox.settings import SandboxConfig
from tests.job_gateway.execution_factories import marked_pid, new_marker, process_gone
from tests.job_gateway.sandbox import serving_probes
from tests.support.sandbox import sandbox_config

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[SandboxConfig]:
    cloudpickle.register_pickle_by_value(serving_probes)
    try:
        yield sandbox_config()
    finally:
        cloudpickle.unregister_pickle_by_value(serving_probes)


@pytest.fixture
def spec(sandbox: SandboxConfig) -> ContainerSpec:
    job = SandboxedJob("serving-test-a", "nvidia", (0,), 1, {"CUDA_VISIBLE_DEVICES": "0"})
    return container_spec(sandbox, job)


def _client(container: ServingContainer) -> httpx.Client:
    transport = httpx.HTTPTransport(uds=str(container.socket_path))
    return httpx.Client(transport=transport, base_url="http://replica", timeout=30)


@pytest.fixture
def calculator(spec: ContainerSpec) -> Iterator[ServingContainer]:
    container = ServingContainer(
        spec, kind="class", program=cloudpickle.dumps(serving_probes.Calculator)
    )
    try:
        container.wait_ready(60)
        yield container
    finally:
        container.close()


class TestClass:
    def test_public_methods_are_routes_taking_and_giving_json(
        self, calculator: ServingContainer
    ) -> None:
        with _client(calculator) as client:
            assert client.post("/add", json={"a": 1, "b": 2}).json() == 13
            assert client.post("/add", json=[5]).json() == 15
            assert client.post("/later", json=["hi"]).json() == "HI"
            missing = client.post("/nothing")
            assert missing.status_code == 404
            assert "add, fail, later" in missing.json()["error"]["message"]
            bad = client.post("/add", content=b"{not json")
            assert bad.status_code == 422

    def test_the_users_exception_is_a_500_with_its_remote_traceback(
        self, calculator: ServingContainer
    ) -> None:
        with _client(calculator) as client:
            answer = client.post("/fail", json={"message": "bad input 7"})
        assert answer.status_code == 500
        error = answer.json()["error"]
        assert (error["type"], error["message"]) == ("ValueError", "bad input 7")
        assert error["traceback"].startswith("Traceback (most recent call last):")
        assert ", in fail" in error["traceback"] and "gridweave_serve" not in error["traceback"]
        assert calculator.serving()  # a user's error is answered, never fatal

    def test_it_runs_as_its_owner_with_no_network_and_none_of_the_host(
        self, calculator: ServingContainer
    ) -> None:
        with _client(calculator) as client:
            view = client.post("/view").json()
        assert view["interfaces"] == ["lo"]
        container_uid, host_uid, size = (int(n) for n in view["uid_map"])
        assert (container_uid, size) == (0, 1) and host_uid not in (0, os.getuid())
        assert max(view["pids"]) < 50
        assert view["readable"] == []

    def test_a_constructor_that_raises_fails_the_start_with_its_message(
        self, spec: ContainerSpec
    ) -> None:
        container = ServingContainer(
            spec, kind="class", program=cloudpickle.dumps(serving_probes.Broken)
        )
        try:
            with pytest.raises(ServingFailed) as failed:
                container.wait_ready(60)
            assert "RuntimeError: the model file is missing" in str(failed.value)
        finally:
            container.close()

    def test_closing_it_ends_everything_it_started(self, spec: ContainerSpec) -> None:
        container = ServingContainer(
            spec, kind="class", program=cloudpickle.dumps(serving_probes.Calculator)
        )
        marker = new_marker()
        try:
            container.wait_ready(60)
            with _client(container) as client:
                assert client.post("/sleep_marked", json=[marker]).status_code == 200
            pid = marked_pid(marker)
        finally:
            container.close()
        deadline = time.monotonic() + 10
        while not process_gone(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process_gone(pid)
        assert not container.bundle.exists()


class TestImageCommand:
    def test_the_images_server_is_reached_through_the_socket_streams_included(
        self, spec: ContainerSpec
    ) -> None:
        container = ServingContainer(
            spec, kind="command", command=["python3", "-c", serving_probes.IMAGE_SERVER]
        )
        try:
            container.wait_ready(60)
            with _client(container) as client:
                answer = client.get("/v1/models")
                assert answer.json()["path"] == "/v1/models"
                assert answer.json()["uid"] == 0  # root of its own user namespace only
                with client.stream("GET", "/stream") as streamed:
                    chunks = list(streamed.iter_text())
                assert "".join(chunks) == "data: 0\n\ndata: 1\n\ndata: 2\n\n"
        finally:
            container.close()

    def test_a_command_that_exits_fails_the_start_saying_so(self, spec: ContainerSpec) -> None:
        container = ServingContainer(
            spec, kind="command", command=["python3", "-c", "raise SystemExit(3)"]
        )
        try:
            with pytest.raises(ServingFailed) as failed:
                container.wait_ready(60)
            assert "exited with code 3" in str(failed.value)
        finally:
            container.close()

    def test_an_image_without_a_command_is_refused(self, spec: ContainerSpec) -> None:
        with pytest.raises(ServingFailed) as failed:
            ServingContainer(spec, kind="command", command=[])
        assert "ENTRYPOINT or CMD" in str(failed.value)
