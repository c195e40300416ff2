"""``GET /v1/endpoints/{name}/-/logs`` through the platform over real HTTP: the owner's
endpoint only, the lines bound checked, the gateway's answer passed through.

The gateway here places endpoints and serves none, so its answer has no replicas and says
why; replicas' real output is tested on real Serve in tests/job_gateway/endpoints/
test_replica_logs.py and in the browser (tests/web).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.platform_service.factories import PlatformServer, User
from tests.support.credit_server import CreditServer

FUNDS = 10**9


def deploy_body(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "mode": "transformers",
        "model_ref": "/models/tiny-gpt2",
        "vram_mb": 4096,
        "vendor": "nvidia",
    }


class TestEndpointLogs:
    @pytest.fixture
    def alice(self, platform: PlatformServer, credit: CreditServer) -> User:
        user = platform.new_user()
        credit.fund(user.user_id, FUNDS)
        deployed = platform.http.post(
            "/v1/endpoints", json=deploy_body("talky"), headers=user.headers
        )
        assert deployed.status_code == 201, deployed.text
        return user

    def test_the_owner_reads_them_and_another_user_gets_404(
        self, platform: PlatformServer, alice: User
    ) -> None:
        logs = platform.http.get("/v1/endpoints/talky/-/logs", headers=alice.headers)
        assert logs.status_code == 200, logs.text
        body = logs.json()
        assert body["replicas"] == [] and body["lines"] == 200
        assert "serves no endpoints" in body["message"]
        some = platform.http.get(
            "/v1/endpoints/talky/-/logs", params={"lines": 5}, headers=alice.headers
        )
        assert some.json()["lines"] == 5
        bob = platform.new_user()
        other = platform.http.get("/v1/endpoints/talky/-/logs", headers=bob.headers)
        assert other.status_code == 404 and other.json()["error"]["code"] == "not_found"
        missing = platform.http.get("/v1/endpoints/nothing-here/-/logs", headers=alice.headers)
        assert missing.status_code == 404
        assert platform.http.get("/v1/endpoints/talky/-/logs").status_code == 401

    @pytest.mark.parametrize("lines", ["0", "1001", "many"])
    def test_a_bad_line_count_is_422_naming_it(
        self, platform: PlatformServer, alice: User, lines: str
    ) -> None:
        answer = platform.http.get(
            "/v1/endpoints/talky/-/logs", params={"lines": lines}, headers=alice.headers
        )
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"]["fields"][0]["field"] == "lines"

    def test_a_stopped_endpoint_answers_what_is_left(
        self, platform: PlatformServer, alice: User
    ) -> None:
        assert platform.http.delete("/v1/endpoints/talky", headers=alice.headers).is_success
        logs = platform.http.get("/v1/endpoints/talky/-/logs", headers=alice.headers)
        assert logs.status_code == 200, logs.text
        assert logs.json()["replicas"] == [] and logs.json()["message"]
