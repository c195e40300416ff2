"""``/v1/admin/registry-quotas``: every user's registry usage and quota, most used first, a
page at a time, as the registry's storage report counted them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.platform_service.factories import PlatformServer, platform_settings, running_platform
from tests.support.credit_server import INTERNAL_TOKEN

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def platform(
    platform_database: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PlatformServer]:
    settings = platform_settings(platform_database, tmp_path_factory.mktemp("platform"))
    with running_platform(settings) as server:
        yield server


def _blob(namespace: str, n: int, size: int) -> dict[str, Any]:
    return {"namespace": namespace, "digest": f"sha256:{n:064x}", "size_bytes": size}


def _page(platform: PlatformServer, query: str = "") -> dict[str, Any]:
    response = platform.http.get(
        f"/v1/admin/registry-quotas{query}", headers=platform.admin.headers
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


class TestListRegistryQuotas:
    def test_every_user_most_used_first_with_quota_and_blobs(
        self, platform: PlatformServer
    ) -> None:
        small, big, idle = platform.new_user(), platform.new_user(), platform.new_user()
        report = {
            "blobs": [_blob(small.user_id, 1, 100), *(_blob(big.user_id, n, 300) for n in (2, 3))]
        }
        counted = platform.http.put(
            "/v1/registry/usage/report",
            json=report,
            headers={"Authorization": f"Bearer {INTERNAL_TOKEN}"},
        )
        assert counted.status_code == 200, counted.text
        quota = platform.http.put(
            f"/v1/admin/users/{big.user_id}/registry-quota",
            json={"quota_bytes": 500},
            headers=platform.admin.headers,
        )
        assert quota.status_code == 200, quota.text
        body = _page(platform, "?limit=500")
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
            alone = platform.http.get(
                f"/v1/admin/users/{user.user_id}/registry-quota", headers=platform.admin.headers
            )
            assert listed[user.user_id] == alone.json()
        assert listed[idle.user_id]["usage_bytes"] == listed[idle.user_id]["blobs"] == 0
        assert listed[idle.user_id]["quota_is_default"] is True
        # a page at a time, in the same order
        second = _page(platform, "?limit=1&offset=1")
        assert [entry["user_id"] for entry in second["users"]] == [small.user_id]

    @pytest.mark.parametrize(
        ("query", "field"), [("limit=0", "limit"), ("limit=501", "limit"), ("offset=-1", "offset")]
    )
    def test_bad_paging_is_named(self, platform: PlatformServer, query: str, field: str) -> None:
        response = platform.http.get(
            f"/v1/admin/registry-quotas?{query}", headers=platform.admin.headers
        )
        assert response.status_code == 422, response.text
        assert response.json()["error"]["fields"][0]["field"] == field

    def test_only_admins(self, platform: PlatformServer) -> None:
        user = platform.new_user()
        response = platform.http.get("/v1/admin/registry-quotas", headers=user.headers)
        assert response.status_code == 403
