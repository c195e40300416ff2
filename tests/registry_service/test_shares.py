"""Repositories shared with other users (pull only, by the owner's choice, revoked at once) and
the public namespace (pulled by anyone, pushed by admins)."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry_service.supervisor import RegistrySupervisor
from tests.platform_service.factories import PlatformServer
from tests.registry_service.factories import Crane

pytestmark = pytest.mark.postgres


def test_a_shared_repository_is_pulled_not_pushed_until_unshared(
    platform: PlatformServer, registry: RegistrySupervisor, tmp_path: Path
) -> None:
    alice, bob = platform.new_user(), platform.new_user()
    alice_crane = Crane(f"localhost:{registry.settings.port}", tmp_path / "alice")
    alice_crane.login(alice.key)
    bob_crane = Crane(f"localhost:{registry.settings.port}", tmp_path / "bob")
    bob_crane.login(bob.key)
    repository = f"{alice.user_id}/model"
    alice_crane.push_random(repository, 2048)
    assert bob_crane.digest(repository, check=False).returncode != 0
    shared = platform.http.post(
        "/v1/registry/shares",
        json={"repository": repository, "user_id": bob.user_id},
        headers=alice.headers,
    )
    assert shared.status_code == 200, shared.text
    assert bob_crane.digest(repository).stdout == alice_crane.digest(repository).stdout
    pushed = bob_crane.push_random(repository, 2048, tag="bob", check=False)
    assert pushed.returncode != 0
    assert "open to you for pull only" in pushed.stderr
    listed = platform.http.get("/v1/registry/shares", headers=bob.headers).json()
    assert [share["repository"] for share in listed["received"]] == [repository]
    assert platform.http.get("/v1/registry/shares", headers=alice.headers).json()["granted"]
    removed = platform.http.delete(
        "/v1/registry/shares",
        params={"repository": repository, "user_id": bob.user_id},
        headers=alice.headers,
    )
    assert removed.status_code == 200, removed.text
    assert bob_crane.digest(repository, check=False).returncode != 0


class TestShareRefusals:
    def test_only_the_owner_shares(self, platform: PlatformServer) -> None:
        alice, bob = platform.new_user(), platform.new_user()
        response = platform.http.post(
            "/v1/registry/shares",
            json={"repository": f"{alice.user_id}/model", "user_id": bob.user_id},
            headers=bob.headers,
        )
        assert response.status_code == 422
        assert response.json()["error"]["fields"][0]["field"] == "repository"

    def test_an_unknown_user_is_not_found(self, platform: PlatformServer) -> None:
        alice = platform.new_user()
        response = platform.http.post(
            "/v1/registry/shares",
            json={"repository": f"{alice.user_id}/model", "user_id": "usr-0000000000000000"},
            headers=alice.headers,
        )
        assert response.status_code == 404

    @pytest.mark.parametrize("repository", ["no-namespace", "UPPER/case", "a//b", ""])
    def test_a_bad_repository_names_the_field(
        self, platform: PlatformServer, repository: str
    ) -> None:
        alice, bob = platform.new_user(), platform.new_user()
        response = platform.http.post(
            "/v1/registry/shares",
            json={"repository": repository, "user_id": bob.user_id},
            headers=alice.headers,
        )
        assert response.status_code == 422
        assert "repository" in response.text

    def test_unsharing_what_was_not_shared_is_not_found(self, platform: PlatformServer) -> None:
        alice, bob = platform.new_user(), platform.new_user()
        response = platform.http.delete(
            "/v1/registry/shares",
            params={"repository": f"{alice.user_id}/model", "user_id": bob.user_id},
            headers=alice.headers,
        )
        assert response.status_code == 404


def test_the_public_namespace_is_pulled_by_anyone_and_pushed_by_admins(
    platform: PlatformServer, registry: RegistrySupervisor, tmp_path: Path
) -> None:
    admin = Crane(f"localhost:{registry.settings.port}", tmp_path / "admin")
    admin.login(platform.admin.key)
    admin.push_random("gridweave/ray-worker", 2048)
    anonymous = Crane(f"localhost:{registry.settings.port}", tmp_path / "anonymous")
    assert (
        anonymous.digest("gridweave/ray-worker").stdout
        == admin.digest("gridweave/ray-worker").stdout
    )
    assert anonymous.push_random("gridweave/ray-worker", 2048, tag="x", check=False).returncode != 0
    user = platform.new_user()
    user_crane = Crane(f"localhost:{registry.settings.port}", tmp_path / "user")
    user_crane.login(user.key)
    assert user_crane.digest("gridweave/ray-worker").stdout.startswith("sha256:")
    pushed = user_crane.push_random("gridweave/ray-worker", 2048, tag="x", check=False)
    assert pushed.returncode != 0
    assert "open to you for pull only" in pushed.stderr
