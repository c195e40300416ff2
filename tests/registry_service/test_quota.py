"""Quotas: usage counted from the registry's notifications (a blob once per user), pushes
refused at the quota with a message naming it, a quota edited live, space given back by a
delete and a collection."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from registry_service.storage import usage_report
from registry_service.supervisor import RegistrySupervisor
from tests.platform_service.factories import PlatformServer, User
from tests.registry_service.factories import Crane

pytestmark = pytest.mark.postgres

LAYER = 200_000


def usage(platform: PlatformServer, user: User) -> dict[str, Any]:
    """The user's registry usage and quota, as the platform counts them."""
    response = platform.http.get("/v1/registry/usage", headers=user.headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def wait_for_usage(platform: PlatformServer, user: User, at_least: int) -> dict[str, Any]:
    """The usage once the registry's notifications counted ``at_least`` bytes."""
    deadline = time.monotonic() + 20
    while (body := usage(platform, user))["usage_bytes"] < at_least:
        assert time.monotonic() < deadline, f"usage stayed {body}"
        time.sleep(0.1)
    return body


def stored_bytes(registry: RegistrySupervisor, user: User) -> int:
    """The bytes of the user's namespace as its storage holds them (read directly)."""
    report = usage_report(registry.storage_dir)
    return sum(blob.size_bytes for blob in report.blobs if blob.namespace == user.user_id)


def wait_for_notifications(
    platform: PlatformServer, registry: RegistrySupervisor, user: User
) -> int:
    """The usage once the notifications counted every blob the storage holds."""
    deadline = time.monotonic() + 20
    expected = stored_bytes(registry, user)
    while (counted := int(usage(platform, user)["usage_bytes"])) != expected:
        assert time.monotonic() < deadline, f"counted {counted}, stored {expected}"
        time.sleep(0.1)
    return counted


def set_quota(platform: PlatformServer, user: User, quota_bytes: int) -> None:
    response = platform.http.put(
        f"/v1/admin/users/{user.user_id}/registry-quota",
        json={"quota_bytes": quota_bytes},
        headers=platform.admin.headers,
    )
    assert response.status_code == 200, response.text
    assert response.json()["quota_bytes"] == quota_bytes


@pytest.fixture
def user_crane(
    platform: PlatformServer, registry: RegistrySupervisor, tmp_path: Path
) -> tuple[User, Crane]:
    user = platform.new_user()
    crane = Crane(f"localhost:{registry.settings.port}", tmp_path / "crane")
    crane.login(user.key)
    return user, crane


class TestUsage:
    def test_a_blob_in_two_images_counts_once(
        self,
        platform: PlatformServer,
        registry: RegistrySupervisor,
        user_crane: tuple[User, Crane],
    ) -> None:
        user, crane = user_crane
        crane.push_random(f"{user.user_id}/first", LAYER)
        first = wait_for_notifications(platform, registry, user)
        assert first > LAYER
        # the same image under a second name: every blob is mounted, none counted again
        crane.run("copy", crane.ref(f"{user.user_id}/first"), crane.ref(f"{user.user_id}/second"))
        time.sleep(1.0)  # the registry's notifications of the copy
        body = usage(platform, user)
        assert body["usage_bytes"] == first == stored_bytes(registry, user)
        assert body["quota_is_default"] is True
        assert body["quota_bytes"] == 10 * 10**9

    def test_reconciliation_counts_what_storage_holds(
        self,
        platform: PlatformServer,
        registry: RegistrySupervisor,
        user_crane: tuple[User, Crane],
    ) -> None:
        user, crane = user_crane
        crane.push_random(f"{user.user_id}/app", LAYER)
        counted = wait_for_notifications(platform, registry, user)
        registry.reconcile()
        assert usage(platform, user)["usage_bytes"] == counted


class TestQuota:
    def test_reached_then_freed_by_delete_and_collection(
        self,
        platform: PlatformServer,
        registry: RegistrySupervisor,
        user_crane: tuple[User, Crane],
    ) -> None:
        user, crane = user_crane
        set_quota(platform, user, 300_000)
        crane.push_random(f"{user.user_id}/one", LAYER)
        wait_for_usage(platform, user, LAYER)
        crane.push_random(f"{user.user_id}/two", LAYER)  # under the quota when it began
        wait_for_usage(platform, user, 2 * LAYER)
        refused = crane.push_random(f"{user.user_id}/three", LAYER, check=False)
        assert refused.returncode != 0
        assert "registry quota exceeded" in refused.stderr
        assert "of its 300.00 KB quota" in refused.stderr
        # pulls go on over quota
        crane.digest(f"{user.user_id}/one")
        for name in ("one", "two"):
            digest = crane.digest(f"{user.user_id}/{name}").stdout.strip()
            crane.run("delete", f"{crane.registry}/{user.user_id}/{name}@{digest}")
        assert usage(platform, user)["usage_bytes"] >= 2 * LAYER  # deleted, not collected
        result = registry.collect()
        assert result.reclaimed_bytes >= 2 * LAYER
        assert usage(platform, user)["usage_bytes"] == 0
        crane.push_random(f"{user.user_id}/three", LAYER)

    def test_a_quota_edited_live_applies_to_the_next_push(
        self, platform: PlatformServer, user_crane: tuple[User, Crane]
    ) -> None:
        user, crane = user_crane
        set_quota(platform, user, 0)
        refused = crane.push_random(f"{user.user_id}/app", 1024, check=False)
        assert refused.returncode != 0
        assert "registry quota exceeded" in refused.stderr
        set_quota(platform, user, 50 * 10**9)
        crane.push_random(f"{user.user_id}/app", 1024)

    def test_only_admins_set_quotas(
        self, platform: PlatformServer, user_crane: tuple[User, Crane]
    ) -> None:
        user, _ = user_crane
        response = platform.http.put(
            f"/v1/admin/users/{user.user_id}/registry-quota",
            json={"quota_bytes": 10**12},
            headers=user.headers,
        )
        assert response.status_code == 403

    @pytest.mark.parametrize("body", [{"quota_bytes": -1}, {"quota_bytes": "50GB"}, {}])
    def test_a_bad_quota_names_the_field(
        self, platform: PlatformServer, user_crane: tuple[User, Crane], body: dict[str, Any]
    ) -> None:
        user, _ = user_crane
        response = platform.http.put(
            f"/v1/admin/users/{user.user_id}/registry-quota",
            json=body,
            headers=platform.admin.headers,
        )
        assert response.status_code == 422
        assert "quota_bytes" in response.text

    def test_an_unknown_user_is_not_found(self, platform: PlatformServer) -> None:
        response = platform.http.put(
            "/v1/admin/users/usr-0000000000000000/registry-quota",
            json={"quota_bytes": 1},
            headers=platform.admin.headers,
        )
        assert response.status_code == 404
