"""The user's own code in a container, on the real runtime (runc) and the default image: a
function of a local package of two modules (pickled with those modules by value, as the SDK
sends it) runs without the package's files, and its traceback shows the user's lines (the
runner registers the sources that follow the pickle with ``linecache``); a class of it served
as an endpoint, its method's exception reaching the SDK as itself."""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import cloudpickle
import httpx
import pytest

import gridweave as gw
from gridweave._config import Config
from gridweave._pickling import dumps, dumps_program
from job_gateway.sandbox.attempt import SandboxedJob, container_spec, run_sandboxed
from job_gateway.sandbox.container import Chunk, ContainerRun
from job_gateway.sandbox.serving import ServingContainer
from job_gateway.sandbox.settings import SandboxConfig
from tests.support.sandbox import sandbox_config
from tests.support.user_project import FAILING_LINE, user_package

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def sandbox() -> SandboxConfig:
    return sandbox_config()


@pytest.fixture
def funcs(tmp_path: Path) -> Iterator[ModuleType]:
    with user_package(tmp_path / "project") as module:
        yield module


def run_program(
    sandbox: SandboxConfig, program: bytes, arguments: bytes, chunk: Chunk | None = None
) -> ContainerRun:
    job = SandboxedJob("program-test-a", "nvidia", (0,), 1, {"CUDA_VISIBLE_DEVICES": "0"})
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        return run_sandboxed(
            sandbox,
            job,
            function=program,
            arguments=arguments,
            stdout=stdout.fileno(),
            stderr=stderr.fileno(),
            chunk=chunk,
        )


def _value(run: ContainerRun) -> Any:
    assert run.header == {"status": "ok"}, run
    return cloudpickle.loads(run.payload)


class TestALocalPackage:
    def test_its_function_runs_in_the_container(
        self, sandbox: SandboxConfig, funcs: ModuleType
    ) -> None:
        run = run_program(sandbox, dumps_program(funcs.compute), dumps(((2,), {})))
        assert _value(run) == 9

    def test_a_local_class_as_its_argument(self, sandbox: SandboxConfig, funcs: ModuleType) -> None:
        run = run_program(sandbox, dumps_program(funcs.point_norm), dumps(((funcs.Point(-4),), {})))
        assert _value(run) == 12


class TestRemoteTraceback:
    def test_it_shows_the_users_files_and_lines(
        self, sandbox: SandboxConfig, funcs: ModuleType
    ) -> None:
        run = run_program(sandbox, dumps_program(funcs.fail), dumps(((5,), {})))
        assert run.header is not None and run.header["status"] == "exception"
        trace = run.header["traceback"]
        helpers = Path(str(funcs.__file__)).with_name("helpers.py")
        assert f'File "{helpers}"' in trace and FAILING_LINE in trace
        assert f'File "{funcs.__file__}"' in trace and "return helpers.explode(x)" in trace
        assert "<dynamic-code>" not in trace
        assert trace.rstrip().endswith("ValueError: bad value 5: scaled 15")

    def test_a_maps_chunk_shows_them_too(self, sandbox: SandboxConfig, funcs: ModuleType) -> None:
        calls: list[tuple[tuple[int], dict[str, Any]]] = [((1,), {}), ((2,), {})]
        run = run_program(
            sandbox, dumps_program(funcs.fail), dumps(calls), Chunk(items=2, retries=0)
        )
        assert [header["status"] for header, _ in run.results] == ["exception", "exception"]
        assert all(FAILING_LINE in header["traceback"] for header, _ in run.results)


class _Relay(ThreadingHTTPServer):
    """The platform's part for a test: ``POST /v1/endpoints/<name>/<method>`` relayed to the
    serving container's socket, its answer passed back as it came."""

    def __init__(self, socket_path: Path) -> None:
        relay = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                method = self.path.rsplit("/", 1)[-1]
                answer = relay.client.post(f"/{method}", content=body)
                self.send_response(answer.status_code)
                self.send_header("Content-Type", answer.headers.get("content-type", ""))
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

        super().__init__(("127.0.0.1", 0), Handler)
        transport = httpx.HTTPTransport(uds=str(socket_path))
        self.client = httpx.Client(transport=transport, base_url="http://replica", timeout=30)


@pytest.fixture
def scaler(sandbox: SandboxConfig, funcs: ModuleType) -> Iterator[gw.CustomEndpoint[Any]]:
    """The local package's class served in its container, called through the SDK."""
    job = SandboxedJob("program-test-a", "nvidia", (0,), 1, {"CUDA_VISIBLE_DEVICES": "0"})
    spec = container_spec(sandbox, job)
    container = ServingContainer(spec, kind="class", program=dumps_program(funcs.Scaler))
    try:
        container.wait_ready(60)
        relay = _Relay(container.socket_path)
        thread = threading.Thread(target=relay.serve_forever, daemon=True)
        thread.start()
        try:
            url = f"http://127.0.0.1:{relay.server_address[1]}"
            yield gw.CustomEndpoint("scaler", frozenset({"scale"}), Config(url, "test-key"))
        finally:
            relay.shutdown()
            relay.client.close()
            relay.server_close()
    finally:
        container.close()


class TestAnEndpointsMethod:
    def test_a_local_packages_class_serves_and_its_exception_arrives_as_itself(
        self, scaler: gw.CustomEndpoint[Any]
    ) -> None:
        assert scaler.scale(2) == 6
        with pytest.raises(ValueError) as raised:
            scaler.scale(-1)
        assert str(raised.value) == "bad value -1: scaled -3"
        trace = raised.value.remote_traceback  # type: ignore[attr-defined]
        assert FAILING_LINE in trace and "return helpers.explode(x)" in trace
        assert any("Remote traceback (endpoint scaler: scale)" in n for n in raised.value.__notes__)
