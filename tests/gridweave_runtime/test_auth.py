"""Service-credential auth on a bare app: no database involved."""

from __future__ import annotations

import logging
from typing import Annotated

import httpx
import pytest
from fastapi import APIRouter, Depends, FastAPI
from starlette.types import Message

from gridweave_runtime import (
    Caller,
    install_error_handlers,
    install_internal_auth,
    require_internal_caller,
    require_role,
)
from gridweave_runtime.auth import PUBLIC_PATHS, callable_by
from gridweave_runtime.credentials import Credentials, load_credentials
from gridweave_runtime.service_roster import credentials_document

pytestmark = pytest.mark.anyio
CallerDep = Annotated[Caller, Depends(require_internal_caller)]
#: The platform's credential (its own role, and admin's for signed-in admins) and metering's.
TOKEN = "s3cret-token-for-tests"
METERING_TOKEN = "metering-token-for-tests"
CREDENTIALS: Credentials = load_credentials(
    credentials_document({"platform": TOKEN, "metering": METERING_TOKEN})
)


@pytest.fixture
def anyio_backend() -> str:
    """Run the async tests on asyncio only."""
    return "asyncio"


def make_app(calls: list[Caller]) -> FastAPI:
    """A bare app with one protected route that records who called it."""
    app = FastAPI()
    install_internal_auth(app, CREDENTIALS)
    install_error_handlers(app)
    router = APIRouter()

    @router.post("/v1/thing")
    def thing(caller: CallerDep) -> dict[str, str | None]:
        calls.append(caller)
        return {"user": caller.user_id, "role": caller.role}

    @router.post("/v1/admin-thing")
    def admin_thing(caller: CallerDep) -> dict[str, bool]:
        require_role(caller, "admin")
        return {"ok": True}

    metering_only = APIRouter(dependencies=callable_by("metering"))

    @metering_only.post("/v1/capture")
    def capture() -> dict[str, bool]:
        return {"ok": True}

    app.include_router(router)
    app.include_router(metering_only)
    return app


async def call(app: FastAPI, path: str, headers: dict[str, str]) -> httpx.Response:
    """POST to the in-process app."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
        return await client.post(path, headers=headers)


class TestRequireInternalCaller:
    @pytest.mark.parametrize(
        "headers",
        [
            {},
            {"Authorization": "Bearer"},
            {"Authorization": "Bearer not-it"},
            {"Authorization": TOKEN},
            {"X-Gridweave-Token": ""},
            {"X-Gridweave-Token": TOKEN[:-1]},
            {"X-Gridweave-User": "mallory", "X-Gridweave-Role": "admin"},
        ],
    )
    async def test_a_missing_or_wrong_token_is_401_and_nothing_runs(
        self, headers: dict[str, str], caplog: pytest.LogCaptureFixture
    ) -> None:
        calls: list[Caller] = []
        caplog.set_level(logging.DEBUG)
        response = await call(make_app(calls), "/v1/thing", headers)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"
        assert calls == []
        assert TOKEN not in caplog.text

    @pytest.mark.parametrize(
        "headers", [{"Authorization": f"Bearer {TOKEN}"}, {"X-Gridweave-Token": TOKEN}]
    )
    async def test_identity_headers_are_trusted_with_the_token(
        self, headers: dict[str, str]
    ) -> None:
        calls: list[Caller] = []
        identity = {"X-Gridweave-User": "alice", "X-Gridweave-Role": "Admin"}
        response = await call(make_app(calls), "/v1/thing", {**headers, **identity})
        assert response.status_code == 200
        assert calls == [
            Caller(user_id="alice", role="admin", service="platform", roles=("admin",))
        ]

    async def test_a_role_the_credential_does_not_have_is_403_and_nothing_runs(self) -> None:
        calls: list[Caller] = []
        for role in ("admin", "platform", "faucet"):
            headers = {"Authorization": f"Bearer {METERING_TOKEN}", "X-Gridweave-Role": role}
            refused = await call(make_app(calls), "/v1/thing", headers)
            assert refused.status_code == 403, role
            assert refused.json()["error"]["code"] == "forbidden"
        assert calls == []

    async def test_without_a_declared_role_a_call_acts_as_its_credentials_own(self) -> None:
        calls: list[Caller] = []
        auth = {"Authorization": f"Bearer {METERING_TOKEN}"}
        assert (await call(make_app(calls), "/v1/thing", auth)).status_code == 200
        assert calls == [Caller(None, "metering", service="metering", roles=("metering",))]

    async def test_a_router_of_one_role_refuses_every_other_credential(self) -> None:
        app = make_app([])
        metering = {"Authorization": f"Bearer {METERING_TOKEN}"}
        assert (await call(app, "/v1/capture", metering)).status_code == 200
        for role in ("platform", "admin", None):
            platform = {"Authorization": f"Bearer {TOKEN}"}
            if role is not None:
                platform["X-Gridweave-Role"] = role
            refused = await call(app, "/v1/capture", platform)
            assert refused.status_code == 403, role

    async def test_a_role_check_is_403(self) -> None:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        app = make_app([])
        refused = await call(app, "/v1/admin-thing", {**auth, "X-Gridweave-Role": "platform"})
        assert refused.status_code == 403
        allowed = await call(app, "/v1/admin-thing", {**auth, "X-Gridweave-Role": "admin"})
        assert allowed.status_code == 200
        metering = {"Authorization": f"Bearer {METERING_TOKEN}"}
        assert (await call(app, "/v1/admin-thing", metering)).status_code == 403

    async def test_an_app_without_a_token_refuses_everyone(self) -> None:
        app = FastAPI()
        install_error_handlers(app)

        @app.post("/v1/thing")
        def thing(caller: CallerDep) -> dict[str, bool]:
            return {"ok": True}

        response = await call(app, "/v1/thing", {"Authorization": "Bearer "})
        assert response.status_code == 401

    def test_no_credential_at_all_cannot_be_installed(self) -> None:
        with pytest.raises(ValueError, match="at least one credential"):
            install_internal_auth(FastAPI(), Credentials({}))


class TestDenyByDefault:
    def _app(self, public_paths: frozenset[str] | None = None) -> FastAPI:
        app = FastAPI()
        if public_paths is None:
            install_internal_auth(app, CREDENTIALS)
        else:
            install_internal_auth(app, CREDENTIALS, public_paths=public_paths)
        install_error_handlers(app)

        @app.post("/healthz")
        @app.post("/v1/nodes/validate")
        @app.post("/v1/open-by-mistake")  # no dependency at all: the middleware still guards it
        def plain() -> dict[str, bool]:
            return {"ok": True}

        return app

    async def test_a_route_without_the_dependency_still_needs_the_token(self) -> None:
        app = self._app()
        refused = await call(app, "/v1/open-by-mistake", {})
        assert refused.status_code == 401
        assert refused.json()["error"]["code"] == "unauthorized"
        allowed = await call(app, "/v1/open-by-mistake", {"Authorization": f"Bearer {TOKEN}"})
        assert allowed.status_code == 200

    async def test_a_prefix_of_some_roles_refuses_the_others_before_any_route(self) -> None:
        app = FastAPI()
        install_internal_auth(app, CREDENTIALS, prefix_roles={"/v1/crd": ("metering",)})
        install_error_handlers(app)

        @app.post("/v1/crd/jobs")
        @app.post("/v1/other")
        def plain() -> dict[str, bool]:
            return {"ok": True}

        platform = {"Authorization": f"Bearer {TOKEN}"}
        metering = {"Authorization": f"Bearer {METERING_TOKEN}"}
        refused = await call(app, "/v1/crd/jobs", platform)
        assert (refused.status_code, refused.json()["error"]["code"]) == (403, "forbidden")
        assert (await call(app, "/v1/crd/no-such-route", platform)).status_code == 403
        assert (await call(app, "/v1/crd/jobs", metering)).status_code == 200
        assert (await call(app, "/v1/other", platform)).status_code == 200

    async def test_unknown_paths_disclose_nothing_without_the_token(self) -> None:
        assert (await call(self._app(), "/v1/no-such-thing", {})).status_code == 401

    async def test_public_paths_are_served_without_it(self) -> None:
        assert (await call(self._app(), "/healthz", {})).status_code == 200
        assert (await call(self._app(), "/v1/nodes/validate", {})).status_code == 401
        service = self._app(PUBLIC_PATHS | {"/v1/nodes/validate"})
        assert (await call(service, "/v1/nodes/validate", {})).status_code == 200

    async def test_a_websocket_without_the_token_is_closed_before_it_is_accepted(self) -> None:
        app = self._app()
        sent: list[Message] = []

        async def receive() -> Message:
            return {"type": "websocket.connect"}

        async def send(message: Message) -> None:
            sent.append(message)

        scope = {
            "type": "websocket",
            "path": "/v1/stream",
            "headers": [],
            "query_string": b"",
            "root_path": "",
        }
        await app(scope, receive, send)
        assert sent == [{"type": "websocket.close", "code": 1008}]
