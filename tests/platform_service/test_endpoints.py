"""Endpoints through the platform over real HTTP: the real gateway on the real apiserver,
the real credit_service on PostgreSQL.

What the platform decides itself (names, ids, refusals before the gateway, the headers a
call forwards) is tested here; serving (Ray Serve) is tests/platform_service/
test_endpoints_served.py.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from gridweave_clients.gateway import endpoints as gw
from gridweave_clients.metering.endpoint_periods import endpoint_hold_amount
from gridweave_clients.metering.pricing import DEFAULT_PRICE_TABLE
from gridweave_clients.platform.endpoints import DeployEndpointRequest
from gridweave_runtime.errors import InvalidRequest
from platform_service.errors import NotFound
from platform_service.services.endpoint_proxy import (
    _check_route,
    _check_upstream,
    _not_serving,
    forwarded_headers,
)
from platform_service.services.endpoints import (
    check_model_source,
    endpoint_id_for,
    endpoint_name,
)
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.factories import PlatformServer, User, pickled
from tests.support.credit_server import INTERNAL_TOKEN, CreditServer

FUNDS = 10**9


def deploy_body(**overrides: Any) -> dict[str, Any]:
    """A transformers endpoint of a local model directory on a 4 GiB NVIDIA slice."""
    return {
        "name": "chat",
        "mode": "transformers",
        "model_ref": "/models/tiny-gpt2",
        "vram_mb": 4096,
        "vendor": "nvidia",
        **overrides,
    }


SERVE = "http://127.0.0.1:8900/gw/ep-1"


class TestRoutesOfTheEndpointOnly:
    """A call reaches its own endpoint's routes and nothing else on the Serve proxy."""

    @pytest.mark.parametrize(
        "path", ["..", ".", "a/../b", "../other-id/v1/models", "-/gw/stats", "-/routes", "a\\b"]
    )
    def test_dot_segments_backslashes_and_reserved_routes_are_404(self, path: str) -> None:
        with pytest.raises(NotFound):
            _check_route(path)

    @pytest.mark.parametrize("path", ["v1/chat/completions", "v1/models/", "predict", "a..b/c"])
    def test_the_endpoints_own_routes_pass(self, path: str) -> None:
        _check_route(path)
        _check_upstream(SERVE, httpx.URL(f"{SERVE}/{path}"), path)

    @pytest.mark.parametrize(
        "upstream",
        ["http://127.0.0.1:8900/gw/ep-2/v1/models", f"{SERVE}/-/gw/stats", f"{SERVE}x/v1"],
    )
    def test_an_upstream_url_outside_the_endpoints_route_is_404(self, upstream: str) -> None:
        with pytest.raises(NotFound):
            _check_upstream(SERVE, httpx.URL(upstream), "v1")


class TestNotServingYet:
    """A call that found the endpoint not running within the wait says why it waits."""

    @staticmethod
    def _view(phase: str, reason: str | None, message: str | None) -> gw.EndpointResponse:
        return gw.EndpointResponse(
            id="ep-1",
            user_id="alice",
            mode="vllm",
            phase=phase,
            reason=reason,
            message=message,
            vram_mb=4096,
        )

    def test_a_pending_endpoints_reason_and_message_are_in_the_answer(self) -> None:
        view = self._view("Pending", "RealGpuBusy", "waiting for 1 real GPU(s) with 4096 MiB")
        error = _not_serving("chat", view, 60.0)
        assert (error.status_code, error.code) == (503, "endpoint_starting")
        assert "(Pending, RealGpuBusy: waiting for 1 real GPU(s) with 4096 MiB)" in str(error)

    def test_a_woken_endpoints_waking_reason_is_in_the_answer(self) -> None:
        view = self._view("Stopped", "Idle", None).model_copy(
            update={
                "waking_reason": "WaitingForGpu",
                "waking_message": "waiting for a GPU with 4096 MiB free (any)",
            }
        )
        error = _not_serving("chat", view, 60.0)
        assert (error.status_code, error.code) == (503, "endpoint_starting")
        assert "(waking, WaitingForGpu: waiting for a GPU with 4096 MiB free (any))" in str(error)

    @pytest.mark.parametrize(("phase", "reason"), [("Pending", None), ("Deploying", None)])
    def test_without_a_reason_it_only_asks_to_try_again(
        self, phase: str, reason: str | None
    ) -> None:
        error = _not_serving("chat", self._view(phase, reason, None), 60.0)
        assert str(error).endswith("did not start within 60 s: try again")


class TestModelSources:
    """A user's model comes from under PLATFORM_MODEL_ROOTS; an admin's from anywhere."""

    ROOTS = ("/srv/models", "s3://gridweave/models")

    @pytest.mark.parametrize(
        ("change", "field"),
        [
            ({"model_ref": "/srv/other-users/model"}, "model_ref"),
            ({"model_ref": "/srv/models/../secrets"}, "model_ref"),
            ({"model_ref": "/srv/modelsX/m"}, "model_ref"),
            ({"model_ref": "s3://gridweave/jobs/someone/result"}, "model_ref"),
            ({"model_ref": None, "model": "/etc"}, "model"),
            ({"model_ref": None, "model": "../x"}, "model"),
        ],
    )
    def test_a_model_from_elsewhere_is_refused_naming_the_field(
        self, change: dict[str, Any], field: str
    ) -> None:
        request = DeployEndpointRequest.model_validate(deploy_body(**change))
        with pytest.raises(InvalidRequest) as refused:
            check_model_source(request, roots=self.ROOTS, admin=False)
        assert refused.value.fields[0]["field"] == field
        check_model_source(request, roots=self.ROOTS, admin=True)  # an admin may

    @pytest.mark.parametrize(
        "change",
        [
            {"model_ref": "/srv/models/tiny-gpt2"},
            {"model_ref": "s3://gridweave/models/tiny"},
            {"model_ref": None, "model": "tiny-gpt2"},
        ],
    )
    def test_a_model_from_under_a_root_or_a_plain_id_passes(self, change: dict[str, Any]) -> None:
        request = DeployEndpointRequest.model_validate(deploy_body(**change))
        check_model_source(request, roots=self.ROOTS, admin=False)


class TestIds:
    def test_one_name_is_another_endpoint_for_another_user(self) -> None:
        first = endpoint_id_for(b"k", user_id="alice", name="chat")
        second = endpoint_id_for(b"k", user_id="bob", name="chat")
        assert first != second
        assert first.startswith("chat-") and len(first) == len("chat-") + 10
        assert endpoint_name(first) == endpoint_name(second) == "chat"

    def test_the_longest_name_makes_a_dns_label(self) -> None:
        endpoint_id = endpoint_id_for(b"k", user_id="alice", name="a" * 50)
        assert len(endpoint_id) <= 63
        assert endpoint_name(endpoint_id) == "a" * 50


class TestForwardedHeaders:
    def test_credentials_identity_and_hop_by_hop_headers_stay_behind(self) -> None:
        sent = forwarded_headers(
            {
                "Authorization": "Bearer gw_live_x_y",
                "Cookie": "gw_session=s",
                "X-CSRF-Token": "t",
                "X-Gridweave-User": "mallory",
                "X-Gridweave-Proxy": "the dashboard's proxy secret",
                "X-Gridweave-Serve-Key": "a caller's guess (the platform sends its own)",
                "Host": "platform",
                "Connection": "keep-alive, X-Private",
                "X-Private": "p",
                "Keep-Alive": "timeout=5",
                "Transfer-Encoding": "chunked",
                "Content-Type": "application/json",
                "Accept": "text/event-stream",
            },
            request=True,
        )
        assert sent == {"Content-Type": "application/json", "Accept": "text/event-stream"}

    def test_an_answer_keeps_its_own_headers_but_hop_by_hop_ones(self) -> None:
        kept = forwarded_headers(
            {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked", "X-Id": "1"},
            request=False,
        )
        assert kept == {"Content-Type": "text/event-stream", "X-Id": "1"}


@pytest.mark.kubeapi
@pytest.mark.postgres
class TestDeployRefusals:
    @pytest.fixture
    def alice(self, platform: PlatformServer, credit: CreditServer) -> User:
        user = platform.new_user()
        credit.fund(user.user_id, FUNDS)
        return user

    @pytest.mark.parametrize(
        ("overrides", "field"),
        [
            ({"name": "Chat"}, "name"),
            ({"name": "x" * 51}, "name"),
            ({"mode": "onnx"}, "mode"),
            ({"model_ref": None}, "model"),
            ({"mode": "custom", "model_ref": None}, "function"),
            ({"function": pickled("cls")}, "function"),
            ({"min_replicas": 3, "max_replicas": 2}, "min_replicas"),
            ({"pip": ["numpy==2.1.3"]}, "pip"),  # a model serves with the node's packages
            ({"mode": "custom", "function": pickled("cls"), "pip": ["-e ."]}, "pip.0"),
            ({"mode": "custom", "function": pickled("cls"), "pip": "numpy"}, "pip"),
            ({"idle_seconds": -1}, "idle_seconds"),
            ({"vram_mb": 0}, "vram_mb"),
        ],
    )
    def test_bad_fields_are_named(
        self, platform: PlatformServer, alice: User, overrides: dict[str, Any], field: str
    ) -> None:
        body = {k: v for k, v in deploy_body(**overrides).items() if v is not None}
        response = platform.http.post("/v1/endpoints", json=body, headers=alice.headers)
        assert response.status_code == 422, response.text
        assert response.json()["error"]["fields"][0]["field"] == field

    def test_without_the_credits_of_one_period_is_402_with_the_figures(
        self, platform: PlatformServer
    ) -> None:
        broke = platform.new_user()
        response = platform.http.post("/v1/endpoints", json=deploy_body(), headers=broke.headers)
        assert response.status_code == 402, response.text
        error = response.json()["error"]
        assert error["code"] == "insufficient_credits"
        assert error["available"] == 0
        assert error["needed"] > 0

    def test_the_credits_of_the_first_holds_are_needed_and_named(
        self, platform: PlatformServer, credit: CreditServer
    ) -> None:
        """Two billing periods at max_replicas: what the billing holds first."""
        body = deploy_body(name="sized", max_replicas=2)
        needed = endpoint_hold_amount(
            DEFAULT_PRICE_TABLE,
            vendor="nvidia",
            vram_mb=4096,
            gpu_count=1,
            max_replicas=2,
            period_seconds=60,
            periods=2,
        )
        short = platform.new_user()
        credit.fund(short.user_id, needed - 1)
        refused = platform.http.post("/v1/endpoints", json=body, headers=short.headers)
        assert refused.status_code == 402, refused.text
        error = refused.json()["error"]
        assert (error["needed"], error["available"]) == (needed, needed - 1)
        assert str(needed) in error["message"]
        enough = platform.new_user()
        credit.fund(enough.user_id, needed)
        accepted = platform.http.post("/v1/endpoints", json=body, headers=enough.headers)
        assert accepted.status_code == 201, accepted.text

    def test_calls_need_an_api_key(self, platform: PlatformServer) -> None:
        response = platform.http.post("/v1/endpoints/chat/v1/chat/completions", json={})
        assert response.status_code == 401

    def test_a_missing_endpoint_is_404_to_its_calls_too(
        self, platform: PlatformServer, alice: User
    ) -> None:
        for method, path in (
            ("GET", "/v1/endpoints/nothing-here"),
            ("DELETE", "/v1/endpoints/nothing-here"),
            ("POST", "/v1/endpoints/nothing-here/v1/completions"),
        ):
            response = platform.http.request(method, path, headers=alice.headers)
            assert response.status_code == 404, (method, path, response.text)
            assert response.json()["error"]["resource"] == "endpoint"


@pytest.mark.kubeapi
@pytest.mark.postgres
class TestEndpointsOfAUser:
    """The gateway here places endpoints and serves none (serving: test_endpoints_served)."""

    @pytest.fixture
    def alice(self, platform: PlatformServer, credit: CreditServer) -> User:
        user = platform.new_user()
        credit.fund(user.user_id, FUNDS)
        return user

    def _deploy(self, platform: PlatformServer, user: User, name: str) -> dict[str, Any]:
        response = platform.http.post(
            "/v1/endpoints", json=deploy_body(name=name), headers=user.headers
        )
        assert response.status_code == 201, response.text
        body: dict[str, Any] = response.json()
        return body

    def test_deploy_list_get_and_another_users_view(
        self, platform: PlatformServer, alice: User
    ) -> None:
        deployed = self._deploy(platform, alice, "listed")
        assert deployed["path"] == "/v1/endpoints/listed"
        assert deployed["endpoint_id"].startswith("listed-")
        got = platform.http.get("/v1/endpoints/listed", headers=alice.headers).json()
        assert (got["name"], got["mode"], got["vram_mb"]) == ("listed", "transformers", 4096)
        names = [
            e["name"]
            for e in platform.http.get("/v1/endpoints", headers=alice.headers).json()["endpoints"]
        ]
        assert "listed" in names
        bob = platform.new_user()
        assert platform.http.get("/v1/endpoints/listed", headers=bob.headers).status_code == 404
        assert platform.http.get("/v1/endpoints", headers=bob.headers).json() == {"endpoints": []}
        reserved = platform.http.get("/v1/endpoints/listed/-/gw/stats", headers=alice.headers)
        assert reserved.status_code == 404, reserved.text
        for sideways in ("..%2F..%2F-/routes", "..%2Flisted-0000000000/v1/models", "a%5Cb"):
            path = f"/v1/endpoints/listed/{sideways}"
            refused = platform.http.get(path, headers=alice.headers)
            assert refused.status_code == 404, (path, refused.text)
            assert refused.json()["error"]["code"] == "not_found"
        again = platform.http.post(
            "/v1/endpoints", json=deploy_body(name="listed"), headers=alice.headers
        )
        assert again.status_code == 409, again.text

    def test_a_stopped_endpoint_answers_409_with_its_reason(
        self, platform: PlatformServer, alice: User
    ) -> None:
        self._deploy(platform, alice, "stopped")
        stopped = platform.http.delete("/v1/endpoints/stopped", headers=alice.headers)
        assert stopped.status_code == 200, stopped.text
        assert (stopped.json()["phase"], stopped.json()["reason"]) == ("Stopped", "Deleted")
        call = platform.http.post(
            "/v1/endpoints/stopped/v1/completions", json={}, headers=alice.headers
        )
        assert call.status_code == 409, call.text
        error = call.json()["error"]
        assert (error["code"], error["reason"]) == ("endpoint_stopped", "Deleted")

    def test_a_stopped_endpoints_name_is_deployed_again(
        self, platform: PlatformServer, alice: User
    ) -> None:
        first = self._deploy(platform, alice, "again")
        platform.http.delete("/v1/endpoints/again", headers=alice.headers).raise_for_status()
        call = platform.http.post("/v1/endpoints/again/v1/completions", headers=alice.headers)
        assert "deploy it again" in call.json()["error"]["message"]
        second = self._deploy(platform, alice, "again")
        assert second["endpoint_id"] == first["endpoint_id"]
        assert (second["phase"], second["reason"], second["stopped_at"]) == ("Pending", None, None)
        listed = platform.http.get("/v1/endpoints", headers=alice.headers).json()["endpoints"]
        # one endpoint of that name, the new run: the scheduler may have placed it already
        assert [e["phase"] for e in listed if e["name"] == "again"] in (["Pending"], ["Deploying"])

    def test_its_cpu_memory_and_gpu_models_reach_its_resource(
        self, platform: PlatformServer, alice: User, gateway: GatewayServer
    ) -> None:
        asked = {"memory_mb": 2048, "cpu_millis": 1500, "gpu_models": ["A100"]}
        body = deploy_body(name="sized", vendor="nvidia") | asked
        response = platform.http.post("/v1/endpoints", json=body, headers=alice.headers)
        assert response.status_code == 201, response.text
        assert {key: response.json()[key] for key in asked} == asked
        internal = {"Authorization": f"Bearer {INTERNAL_TOKEN}"}
        endpoint_id = response.json()["endpoint_id"]
        at_gateway = gateway.http.get(f"/v1/endpoints/{endpoint_id}", headers=internal).json()
        assert {key: at_gateway[key] for key in asked} == asked
        for field, value in (("gpu_models", ["H100"]), ("memory_mb", 32), ("cpu_millis", 1)):
            refused = platform.http.post(
                "/v1/endpoints",
                json=deploy_body(name="unsized", vendor="nvidia") | {field: value},
                headers=alice.headers,
            )
            assert refused.status_code == 422, refused.text
            assert refused.json()["error"]["fields"][0]["field"] == field

    def test_a_custom_endpoints_requirements_reach_its_resource(
        self, platform: PlatformServer, alice: User, gateway: GatewayServer
    ) -> None:
        requirements = ["numpy==2.1.3", "requests[socks]>=2"]
        body = deploy_body(
            name="with-pip", mode="custom", model_ref=None, function=pickled("cls")
        ) | {"pip": requirements}
        body = {k: v for k, v in body.items() if v is not None}
        response = platform.http.post("/v1/endpoints", json=body, headers=alice.headers)
        assert response.status_code == 201, response.text
        assert response.json()["pip"] == requirements
        got = platform.http.get("/v1/endpoints/with-pip", headers=alice.headers).json()
        assert got["pip"] == requirements
        internal = {"Authorization": f"Bearer {INTERNAL_TOKEN}"}
        endpoint_id = response.json()["endpoint_id"]
        at_gateway = gateway.http.get(f"/v1/endpoints/{endpoint_id}", headers=internal).json()
        assert at_gateway["pip"] == requirements
        plain = platform.http.post(
            "/v1/endpoints", json=deploy_body(name="without-pip"), headers=alice.headers
        )
        assert plain.status_code == 201, plain.text
        assert plain.json()["pip"] is None

    def test_an_any_vendor_endpoint_records_the_vendor_it_was_placed_on(
        self, platform: PlatformServer, alice: User, gateway: GatewayServer
    ) -> None:
        """What billing prices it at: the gateway's answer carries the placed GPUs' maker."""
        response = platform.http.post(
            "/v1/endpoints", json=deploy_body(name="anywhere", vendor="any"), headers=alice.headers
        )
        assert response.status_code == 201, response.text
        internal = {"Authorization": f"Bearer {INTERNAL_TOKEN}"}
        deadline = time.monotonic() + 30
        while True:
            placed = gateway.http.get(
                f"/v1/endpoints/{response.json()['endpoint_id']}", headers=internal
            ).json()
            if placed["phase"] != "Pending" or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert placed["node"] is not None, placed
        nodes = gateway.http.get("/v1/inventory", headers=internal).json()["nodes"]
        gpus = {
            (node["name"], gpu["index"]): gpu["vendor"] for node in nodes for gpu in node["gpus"]
        }
        assert placed["placed_vendor"] == gpus[(placed["node"], placed["gpu_indices"][0])]

    @pytest.mark.parametrize("reason", ["Idle", None])
    def test_an_endpoint_in_service_keeps_its_name(
        self, platform: PlatformServer, alice: User, gateway: GatewayServer, reason: str | None
    ) -> None:
        """Scaled to zero (the next call wakes it) or not stopped: 409, nothing replaced."""
        name = f"kept-{(reason or 'live').lower()}"
        deployed = self._deploy(platform, alice, name)
        if reason is not None:
            gateway.http.post(
                f"/v1/endpoints/{deployed['endpoint_id']}/stop",
                json={"reason": reason},
                headers={"Authorization": f"Bearer {INTERNAL_TOKEN}"},
            ).raise_for_status()
        before = platform.http.get(f"/v1/endpoints/{name}", headers=alice.headers).json()
        again = platform.http.post(
            "/v1/endpoints", json=deploy_body(name=name), headers=alice.headers
        )
        assert again.status_code == 409, again.text
        after = platform.http.get(f"/v1/endpoints/{name}", headers=alice.headers).json()
        assert after["created_at"] == before["created_at"]

    def test_a_call_that_would_wake_it_past_the_users_quota_is_429(
        self, platform: PlatformServer, alice: User, gateway: GatewayServer
    ) -> None:
        """The proxy reads the caller's quota when a call wakes an endpoint scaled to zero:
        4 GiB here, another endpoint holding 4 GiB: refused, and it stays scaled to zero."""
        sleeping = self._deploy(platform, alice, "sleeping")
        gateway.http.post(
            f"/v1/endpoints/{sleeping['endpoint_id']}/stop",
            json={"reason": "Idle"},
            headers={"Authorization": f"Bearer {INTERNAL_TOKEN}"},
        ).raise_for_status()
        self._deploy(platform, alice, "awake")
        limits = platform.http.put(
            f"/v1/admin/users/{alice.user_id}/limits",
            json={"max_vram_mb": 4096},
            headers=platform.admin.headers,
        )
        assert limits.status_code == 200, limits.text
        call = platform.http.get("/v1/endpoints/sleeping/v1/models", headers=alice.headers)
        assert call.status_code == 429, call.text
        error = call.json()["error"]
        assert (error["code"], error["quota"], error["in_use"], error["asked"]) == (
            "quota_exceeded",
            "max_vram_mb",
            4096,
            4096,
        )
        got = platform.http.get("/v1/endpoints/sleeping", headers=alice.headers).json()
        assert (got["phase"], got["reason"]) == ("Stopped", "Idle")

    def test_out_of_credits_answers_402_and_the_api_says_why(
        self, platform: PlatformServer, alice: User, gateway: GatewayServer
    ) -> None:
        deployed = self._deploy(platform, alice, "unpaid")
        response = gateway.http.post(
            f"/v1/endpoints/{deployed['endpoint_id']}/stop",
            json={"reason": "OutOfCredits", "message": "the next period cannot be paid"},
            headers={"Authorization": f"Bearer {INTERNAL_TOKEN}"},
        )
        assert response.status_code == 200, response.text
        got = platform.http.get("/v1/endpoints/unpaid", headers=alice.headers).json()
        assert (got["phase"], got["reason"]) == ("Stopped", "OutOfCredits")
        call = platform.http.get("/v1/endpoints/unpaid/v1/models", headers=alice.headers)
        assert call.status_code == 402, call.text
        assert call.json()["error"]["code"] == "endpoint_out_of_credits"

    def test_a_spending_limit_stop_answers_402_naming_it(
        self, platform: PlatformServer, alice: User, gateway: GatewayServer
    ) -> None:
        deployed = self._deploy(platform, alice, "capped")
        message = "the next billing period would pass the monthly spending cap"
        response = gateway.http.post(
            f"/v1/endpoints/{deployed['endpoint_id']}/stop",
            json={"reason": "SpendingLimit", "message": message},
            headers={"Authorization": f"Bearer {INTERNAL_TOKEN}"},
        )
        assert response.status_code == 200, response.text
        got = platform.http.get("/v1/endpoints/capped", headers=alice.headers).json()
        assert (got["phase"], got["reason"]) == ("Stopped", "SpendingLimit")
        call = platform.http.get("/v1/endpoints/capped/v1/models", headers=alice.headers)
        assert call.status_code == 402, call.text
        error = call.json()["error"]
        assert error["code"] == "endpoint_spending_limit"
        assert message in error["message"]
