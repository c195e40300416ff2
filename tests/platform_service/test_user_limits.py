"""``/v1/admin/users/{id}/limits``: quotas and share weights an admin sets, stored by the
platform, enforced by the real gateway (429 naming the quota) and pushed to its scheduler."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.factories import PlatformServer, User, map_body, submit_body
from tests.support.credit_server import INTERNAL_TOKEN, CreditServer

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

FUNDS = 10**9
INTERNAL = {"Authorization": f"Bearer {INTERNAL_TOKEN}"}  # the gateway's token


@pytest.fixture
def alice(platform: PlatformServer, credit: CreditServer) -> User:
    """A funded user."""
    user = platform.new_user()
    credit.fund(user.user_id, FUNDS)
    return user


def set_limits(platform: PlatformServer, user_id: str, **limits: Any) -> httpx.Response:
    return platform.http.put(
        f"/v1/admin/users/{user_id}/limits", json=limits, headers=platform.admin.headers
    )


def submit(platform: PlatformServer, user: User, **overrides: Any) -> httpx.Response:
    return platform.http.post("/v1/jobs", json=submit_body(**overrides), headers=user.headers)


def gateway_weights(gateway: GatewayServer) -> dict[str, float]:
    """The weights the gateway's scheduler uses now."""
    answer = gateway.http.get("/v1/shares", headers=INTERNAL)
    assert answer.status_code == 200, answer.text
    weights: dict[str, float] = answer.json()["weights"]
    return weights


def quota_error(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 429, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == "quota_exceeded"
    return error


class TestSetLimits:
    def test_set_read_and_cleared(self, platform: PlatformServer, alice: User) -> None:
        path = f"/v1/admin/users/{alice.user_id}/limits"
        unset = platform.http.get(path, headers=platform.admin.headers)
        assert unset.status_code == 200, unset.text
        assert unset.json() == {
            "user_id": alice.user_id,
            "max_gpus": None,
            "max_vram_mb": None,
            "share_weight": 1.0,
            "share_weight_is_default": True,
        }
        answer = set_limits(platform, alice.user_id, max_gpus=4, max_vram_mb=65536, share_weight=2)
        assert answer.status_code == 200, answer.text
        assert answer.json()["max_gpus"] == 4 and answer.json()["share_weight"] == 2.0
        assert platform.http.get(path, headers=platform.admin.headers).json() == answer.json()
        cleared = set_limits(platform, alice.user_id)
        assert cleared.json() == unset.json()

    @pytest.mark.parametrize(
        ("limits", "field"),
        [
            ({"max_gpus": -1}, "max_gpus"),
            ({"max_gpus": 1.5}, "max_gpus"),
            ({"max_vram_mb": "lots"}, "max_vram_mb"),
            ({"share_weight": 0}, "share_weight"),
            ({"share_weight": -2}, "share_weight"),
            ({"max_cpus": 3}, "max_cpus"),
        ],
    )
    def test_bad_input_is_422_naming_the_field(
        self, platform: PlatformServer, alice: User, limits: dict[str, Any], field: str
    ) -> None:
        answer = set_limits(platform, alice.user_id, **limits)
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"]["fields"][0]["field"] == field

    def test_an_unknown_user_is_404(self, platform: PlatformServer) -> None:
        assert set_limits(platform, "usr-nobody", max_gpus=1).status_code == 404

    def test_a_user_may_not_read_or_set_limits(self, platform: PlatformServer, alice: User) -> None:
        path = f"/v1/admin/users/{alice.user_id}/limits"
        put = platform.http.put(path, json={"max_gpus": 100}, headers=alice.headers)
        assert put.status_code == 403, put.text
        assert platform.http.get(path, headers=alice.headers).status_code == 403


class TestQuota:
    def test_past_the_gpu_quota_is_429_naming_it_and_nothing_held(
        self, platform: PlatformServer, credit: CreditServer, alice: User
    ) -> None:
        set_limits(platform, alice.user_id, max_gpus=2)
        for _ in range(2):
            assert submit(platform, alice).status_code == 201
        held = credit.account(alice.user_id)["held"]
        error = quota_error(submit(platform, alice))
        assert (error["quota"], error["limit"], error["in_use"], error["asked"]) == (
            "max_gpus",
            2,
            2,
            1,
        )
        assert credit.account(alice.user_id)["held"] == held  # its hold given back

    def test_the_vram_quota(self, platform: PlatformServer, alice: User) -> None:
        set_limits(platform, alice.user_id, max_vram_mb=10_000)
        assert submit(platform, alice, vram_mb=8192).status_code == 201
        error = quota_error(submit(platform, alice, vram_mb=4096))
        assert (error["quota"], error["in_use"], error["asked"]) == ("max_vram_mb", 8192, 4096)
        assert submit(platform, alice, vram_mb=1024).status_code == 201

    def test_another_user_is_unaffected(
        self, platform: PlatformServer, credit: CreditServer, alice: User
    ) -> None:
        set_limits(platform, alice.user_id, max_gpus=0)
        quota_error(submit(platform, alice))
        bob = platform.new_user()
        credit.fund(bob.user_id, FUNDS)
        assert submit(platform, bob).status_code == 201

    def test_a_map_past_the_quota_is_refused_whole(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User
    ) -> None:
        set_limits(platform, alice.user_id, max_gpus=2)
        answer = platform.http.post("/v1/maps", json=map_body(), headers=alice.headers)
        error = quota_error(answer)
        assert (error["quota"], error["in_use"], error["asked"]) == ("max_gpus", 0, 3)
        assert gateway.crd.list_jobs(user_id=alice.user_id) == []
        fits = platform.http.post("/v1/maps", json=map_body(concurrency=2), headers=alice.headers)
        assert fits.status_code == 201, fits.text

    def test_an_endpoint_deploy_past_the_vram_quota_is_429(
        self, platform: PlatformServer, alice: User
    ) -> None:
        set_limits(platform, alice.user_id, max_vram_mb=8192)
        body = {
            "name": "chat",
            "mode": "transformers",
            "model_ref": "/models/tiny-gpt2",
            "vram_mb": 4096,
            "vendor": "nvidia",
        }
        refused = platform.http.post(
            "/v1/endpoints", json={**body, "max_replicas": 3}, headers=alice.headers
        )
        error = quota_error(refused)
        assert (error["quota"], error["in_use"], error["asked"]) == ("max_vram_mb", 0, 12288)
        deployed = platform.http.post("/v1/endpoints", json=body, headers=alice.headers)
        assert deployed.status_code == 201, deployed.text
        job = quota_error(submit(platform, alice, vram_mb=8192))
        assert (job["in_use"], job["asked"]) == (4096, 8192)

    def test_cleared_quota_admits_again(self, platform: PlatformServer, alice: User) -> None:
        set_limits(platform, alice.user_id, max_gpus=0)
        quota_error(submit(platform, alice))
        set_limits(platform, alice.user_id)
        assert submit(platform, alice).status_code == 201


class TestShareWeights:
    def test_weights_reach_the_scheduler(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User
    ) -> None:
        set_limits(platform, alice.user_id, share_weight=3)
        assert gateway_weights(gateway)[alice.user_id] == 3.0
        set_limits(platform, alice.user_id, max_gpus=5)  # the weight cleared: 1 again
        assert alice.user_id not in gateway_weights(gateway)

    def test_every_weight_is_pushed_again(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User
    ) -> None:
        """A gateway that lost them (restarted) gets all of them back with the next push."""
        set_limits(platform, alice.user_id, share_weight=2.5)
        lost = gateway.http.put("/v1/shares", json={"weights": {}}, headers=INTERNAL)
        assert lost.status_code == 200, lost.text
        bob = platform.new_user()
        set_limits(platform, bob.user_id, share_weight=0.5)
        weights = gateway_weights(gateway)
        assert (weights[alice.user_id], weights[bob.user_id]) == (2.5, 0.5)
