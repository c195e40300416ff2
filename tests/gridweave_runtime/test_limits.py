"""The request limits every service gets from the runtime, over a real uvicorn on loopback.

Each test sends raw bytes over a socket (an HTTP client would refuse to send most of them)
to an app made by ``create_service_app`` and served as ``serve()`` serves one.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
from fastapi import APIRouter
from pydantic import BaseModel

from gridweave_clients.fields import MAX_UNKNOWN_FIELDS, RequestBody
from gridweave_runtime.app import create_service_app
from gridweave_runtime.settings import ServiceSettings
from tests.support.credentials import service_auth
from tests.support.http_server import serve_in_thread

TOKEN = "test-internal-token-limits"
AUTH = f"Authorization: Bearer {TOKEN}\r\n".encode()


class EchoBody(RequestBody):
    """Two fields; anything else is unknown."""

    size: int
    name: str = "x"


class Echoed(BaseModel):
    """What the echo route answers."""

    size: int
    received: int


def _router() -> APIRouter:
    router = APIRouter()

    @router.post("/v1/echo")
    def echo(body: EchoBody) -> Echoed:
        return Echoed(size=body.size, received=len(body.name))

    @router.post("/v1/uploads/echo")
    def upload(body: EchoBody) -> Echoed:
        return Echoed(size=body.size, received=len(body.name))

    return router


@dataclass(frozen=True)
class Served:
    """A served test app: where, and with which settings."""

    url: str
    port: int
    settings: ServiceSettings


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    """A service with small limits (for quick tests), served like ``serve()`` does."""
    settings = ServiceSettings(
        **service_auth(TOKEN),
        max_header_bytes=4_096,
        max_header_count=20,
        header_timeout_seconds=0.5,
        max_body_bytes=2_048,
        body_timeout_seconds=0.5,
        max_error_fields=5,
    )
    app = create_service_app(
        service="limits_test",
        settings=settings,
        routers=[_router()],
        body_limits={"/v1/uploads": 64_000},
    )
    with serve_in_thread(app, settings) as url:
        yield Served(url=url, port=int(url.rsplit(":", 1)[1]), settings=settings)


@dataclass(frozen=True)
class Answer:
    """A raw HTTP answer: status, headers (lower-case), body."""

    status: int
    headers: dict[str, str]
    body: bytes


def exchange(served: Served, *parts: bytes, pause: float = 0.0, read_s: float = 10.0) -> Answer:
    """Send ``parts`` (``pause`` seconds apart), then read the answer until the server closes."""
    with socket.create_connection(("127.0.0.1", served.port), timeout=read_s) as sock:
        for part in parts:
            try:
                sock.sendall(part)
            except (BrokenPipeError, ConnectionResetError):
                break  # refused already: the answer is waiting
            time.sleep(pause)
        received = b""
        try:
            while chunk := sock.recv(65_536):
                received += chunk
        except ConnectionResetError:
            pass  # closed with our unread bytes in its buffer: the answer came first
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return Answer(status=int(status_line.split()[1]), headers=headers, body=body)


def error_of(answer: Answer) -> dict[str, object]:
    """The Gridweave error object of an answer."""
    error: dict[str, object] = httpx.Response(200, content=answer.body).json()["error"]
    return error


class TestRequestHead:
    def test_a_head_past_the_limit_is_431_and_closed(self, served: Served) -> None:
        big = b"X-Big: " + b"a" * 1_000_000 + b"\r\n"
        answer = exchange(served, b"GET /healthz HTTP/1.1\r\nHost: t\r\n", big, b"\r\n")
        assert answer.status == 431
        assert answer.headers["connection"] == "close"
        assert error_of(answer) == {
            "code": "request_head_too_large",
            "message": "the request line and headers are too large",
            "max_bytes": 4_096,
        }

    def test_the_limit_holds_before_auth(self, served: Served) -> None:
        path = b"/v1/echo?" + b"q" * 10_000  # a long request line counts too
        answer = exchange(served, b"GET " + path + b" HTTP/1.1\r\nHost: t\r\n\r\n")
        assert answer.status == 431

    def test_too_many_headers_is_431(self, served: Served) -> None:
        headers = b"".join(b"X-H%d: 1\r\n" % index for index in range(21))
        answer = exchange(served, b"GET /healthz HTTP/1.1\r\nHost: t\r\n" + headers + b"\r\n")
        assert answer.status == 431
        assert error_of(answer)["code"] == "too_many_headers"
        assert error_of(answer)["max_headers"] == 20

    def test_a_head_just_within_the_limits_is_served(self, served: Served) -> None:
        headers = b"".join(b"X-H%d: 1\r\n" % index for index in range(17))  # 20 with the rest
        filler = b"X-Fill: " + b"f" * 3_000 + b"\r\n"
        answer = exchange(
            served,
            b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n" + headers + filler,
            b"\r\n",
        )
        assert answer.status == 200

    def test_a_head_dribbled_past_its_time_is_408(self, served: Served) -> None:
        # slowloris: one header line every 0.2 s, never the blank line
        lines = [b"GET /healthz HTTP/1.1\r\n"] + [b"X-Slow: 1\r\n"] * 10
        answer = exchange(served, *lines, pause=0.2)
        assert answer.status == 408
        assert error_of(answer)["code"] == "request_timeout"

    def test_an_idle_connection_is_closed_without_an_answer(self, served: Served) -> None:
        with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
            assert sock.recv(1) == b""  # closed by the server after the head's time

    def test_a_second_request_on_a_kept_connection_is_timed_from_its_first_byte(
        self, served: Served
    ) -> None:
        first = b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"
        with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
            sock.sendall(first)
            assert sock.recv(65_536).startswith(b"HTTP/1.1 200")
            time.sleep(0.8)  # longer than the head's time, shorter than keep-alive
            sock.sendall(first)
            assert sock.recv(65_536).startswith(b"HTTP/1.1 200")


class TestRequestBody:
    def test_a_declared_body_past_the_limit_is_413_unread(self, served: Served) -> None:
        answer = exchange(
            served,
            b"POST /v1/echo HTTP/1.1\r\nHost: t\r\n" + AUTH + b"Content-Length: 100000000\r\n\r\n",
        )
        assert answer.status == 413
        assert answer.headers["connection"] == "close"
        assert error_of(answer) | {"message": ""} == {
            "code": "request_too_large",
            "message": "",
            "max_bytes": 2_048,
            "declared_bytes": 100_000_000,
        }

    def test_a_chunked_body_past_the_limit_is_413(self, served: Served) -> None:
        chunk = b"%x\r\n%s\r\n" % (1_000, b"a" * 1_000)
        answer = exchange(
            served,
            b"POST /v1/echo HTTP/1.1\r\nHost: t\r\n" + AUTH + b"Transfer-Encoding: chunked\r\n\r\n",
            chunk * 5,
            b"0\r\n\r\n",
        )
        assert answer.status == 413
        assert error_of(answer) == {
            "code": "request_too_large",
            "message": "the request body is too large",
            "max_bytes": 2_048,
        }

    def test_a_body_not_arriving_in_time_is_408(self, served: Served) -> None:
        answer = exchange(
            served,
            b"POST /v1/echo HTTP/1.1\r\nHost: t\r\n" + AUTH + b"Content-Length: 40\r\n\r\n",
            b'{"size": 1',  # and then nothing
        )
        assert answer.status == 408
        assert error_of(answer)["code"] == "request_timeout"

    def test_an_announced_oversized_body_is_413_even_without_the_token(
        self, served: Served
    ) -> None:
        answer = exchange(
            served, b"POST /v1/echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100000000\r\n\r\n"
        )
        assert answer.status == 413
        assert answer.headers["connection"] == "close"

    def test_without_the_token_the_body_is_not_even_read(self, served: Served) -> None:
        answer = exchange(
            served,
            b"POST /v1/uploads/echo HTTP/1.1\r\nHost: t\r\nContent-Length: 50000\r\n\r\n",
            b"{" * 50_000,
        )
        assert answer.status == 401
        assert answer.headers["connection"] == "close"  # the rest is never read

    def test_a_route_declared_larger_takes_more(self, served: Served) -> None:
        name = "n" * 10_000
        with httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
            larger = c.post("/v1/uploads/echo", json={"size": 1, "name": name})
            default = c.post("/v1/echo", json={"size": 1, "name": name})
        assert larger.status_code == 200
        assert larger.json() == {"size": 1, "received": 10_000}
        assert default.status_code == 413


class TestValidationErrorsStaySmall:
    def test_the_listed_fields_are_capped_and_the_rest_counted(self, served: Served) -> None:
        body = {f"k{index}": 1 for index in range(MAX_UNKNOWN_FIELDS)}
        with httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
            response = c.post("/v1/echo", json=body)
        error = response.json()["error"]
        assert response.status_code == 422
        # 20 unknown fields and the missing "size": 5 listed (the setting), 16 counted
        assert len(error["fields"]) == 5
        assert error["more_fields"] == 16
        assert error["message"].endswith(" and 16 more")

    def test_many_unknown_fields_are_refused_at_once_as_one_error(self, served: Served) -> None:
        body = {f"k{index}": 1 for index in range(MAX_UNKNOWN_FIELDS + 3)} | {"size": 1}
        with httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
            response = c.post("/v1/echo", json=body)
        error = response.json()["error"]
        assert response.status_code == 422
        assert [field["field"] for field in error["fields"]] == ["body"]
        assert error["fields"][0]["message"].startswith("23 unknown fields")
        assert "more_fields" not in error

    def test_a_huge_field_name_is_not_echoed_back(self, served: Served) -> None:
        with httpx.Client(base_url=served.url, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
            response = c.post("/v1/uploads/echo", json={"size": 1, "k" * 50_000: 1})
        assert response.status_code == 422
        assert len(response.content) < 1_000
        assert response.json()["error"]["fields"][0]["field"].endswith("...")


class TestHealth:
    def test_head_healthz_answers_200_without_a_body(self, served: Served) -> None:
        with httpx.Client(base_url=served.url) as client:
            response = client.head("/healthz")
        assert response.status_code == 200
        assert response.content == b""


class TestSettings:
    def test_every_limit_is_a_documented_setting(self) -> None:
        limits = [
            "max_header_bytes",
            "max_header_count",
            "header_timeout_seconds",
            "max_body_bytes",
            "body_timeout_seconds",
            "keep_alive_seconds",
            "max_error_fields",
        ]
        fields = ServiceSettings.model_fields
        assert all(fields[name].description for name in limits)
        with open("docs/architecture.md", encoding="utf-8") as handle:
            architecture = handle.read()
        for name in limits:
            assert f"`CREDITS_{name.upper()}`" in architecture, name
