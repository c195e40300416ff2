"""``/v1/admin/registry-quotas``: every user's registry usage and quota, most used first, a
page at a time, as the registry's storage report counted them."""

from __future__ import annotations

from typing import Any

import pytest

from tests.platform_service.factories import PlatformServer
from tests.support.credit_server import INTERNAL_TOKEN

pytestmark = pytest.mark.postgres


def _blob(namespace: str, n: int, size: int) -> dict[str, Any]:
    return {"namespace": namespace, "digest": f"sha256:{n:064x}", "size_bytes": size}


def _page(lone_platform: PlatformServer, query: str = "") -> dict[str, Any]:
    response = lone_platform.http.get(
        f"/v1/admin/registry-quotas{query}", headers=lone_platform.admin.headers
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


class TestListRegistryQuotas:
    def test_every_user_most_used_first_with_quota_and_blobs(
        self, lone_platform: PlatformServer
    ) -> None:
        small, big, idle = (
            lone_platform.new_user(),
            lone_platform.new_user(),
            lone_platform.new_user(),
        )
        report = {
            "blobs": [_blob(small.user_id, 1, 100), *(_blob(big.user_id, n, 300) for n in (2, 3))]
        }
        counted = lone_platform.http.put(
            "/v1/registry/usage/report",
            json=report,
            headers={"Authorization": f"Bearer {INTERNAL_TOKEN}"},
        )
        assert counted.status_code == 200, counted.text
        quota = lone_platform.http.put(
            f"/v1/admin/users/{big.user_id}/registry-quota",
            json={"quota_bytes": 500},
            headers=lone_platform.admin.headers,
        )
        assert quota.status_code == 200, quota.text
        body = _page(lone_platform, "?limit=500")
        assert body["total"] == len(body["users"]) >= 4  # the admin too
        listed = {entry["user_id"]: entry for entry in body["users"]}
        assert [entry["user_id"] for entry in body["users"]][:2] == [big.user_id, small.user_id]
        assert listed[big.user_id] == {
            "user_id": big.user_id,
            "quota_bytes": 500,
            "usage_bytes": 600,
            "blobs": 2,
            "quota_is_default": False,
        }
        assert (listed[small.user_id]["usage_bytes"], listed[small.user_id]["blobs"]) == (100, 1)
        # each entry is what the user's own route says
        for user in (small, big, idle):
            alone = lone_platform.http.get(
                f"/v1/admin/users/{user.user_id}/registry-quota",
                headers=lone_platform.admin.headers,
            )
            assert listed[user.user_id] == alone.json()
        assert listed[idle.user_id]["usage_bytes"] == listed[idle.user_id]["blobs"] == 0
        assert listed[idle.user_id]["quota_is_default"] is True
        # a page at a time, in the same order
        second = _page(lone_platform, "?limit=1&offset=1")
        assert [entry["user_id"] for entry in second["users"]] == [small.user_id]

    @pytest.mark.parametrize(
        ("query", "field"), [("limit=0", "limit"), ("limit=501", "limit"), ("offset=-1", "offset")]
    )
    def test_bad_paging_is_named(
        self, lone_platform: PlatformServer, query: str, field: str
    ) -> None:
        response = lone_platform.http.get(
            f"/v1/admin/registry-quotas?{query}", headers=lone_platform.admin.headers
        )
        assert response.status_code == 422, response.text
        assert response.json()["error"]["fields"][0]["field"] == field

    def test_only_admins(self, lone_platform: PlatformServer) -> None:
        user = lone_platform.new_user()
        response = lone_platform.http.get("/v1/admin/registry-quotas", headers=user.headers)
        assert response.status_code == 403
