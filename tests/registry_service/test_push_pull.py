"""Push and pull through the platform's tokens with the real crane and oras: each user in
its own namespace, another user's repository refused, anonymous refused, admins everywhere."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from registry_service.supervisor import RegistrySupervisor
from tests.platform_service.factories import PlatformServer, User
from tests.registry_service.factories import Crane, oras

pytestmark = pytest.mark.postgres


def crane_for(registry: RegistrySupervisor, home: Path, user: User | None) -> Crane:
    """crane logged in as ``user`` (None: anonymous)."""
    crane = Crane(f"localhost:{registry.settings.port}", home)
    if user is not None:
        crane.login(user.key)
    return crane


class TestOwnNamespace:
    def test_two_users_push_and_pull_their_own_images(
        self, platform: PlatformServer, registry: RegistrySupervisor, tmp_path: Path
    ) -> None:
        alice, bob = platform.new_user(), platform.new_user()
        alice_crane = crane_for(registry, tmp_path / "alice", alice)
        bob_crane = crane_for(registry, tmp_path / "bob", bob)
        alice_crane.push_random(f"{alice.user_id}/app", 4096)
        bob_crane.push_random(f"{bob.user_id}/app", 4096)
        alice_digest = alice_crane.digest(f"{alice.user_id}/app").stdout.strip()
        bob_digest = bob_crane.digest(f"{bob.user_id}/app").stdout.strip()
        assert alice_digest.startswith("sha256:") and bob_digest.startswith("sha256:")
        assert alice_digest != bob_digest
        pulled = tmp_path / "alice.tar"
        alice_crane.run("pull", alice_crane.ref(f"{alice.user_id}/app"), str(pulled))
        assert pulled.stat().st_size > 4096

    def test_oras_pushes_and_pulls_a_file(
        self, platform: PlatformServer, registry: RegistrySupervisor, tmp_path: Path
    ) -> None:
        user = platform.new_user()
        home = tmp_path / "oras"
        home.mkdir()
        (home / "model.bin").write_bytes(b"weights" * 1000)
        target = f"localhost:{registry.settings.port}/{user.user_id}/model:v1"
        credentials = ("--plain-http", "-u", "gridweave", "-p", user.key)
        oras(home, "push", *credentials, target, "model.bin")
        (home / "model.bin").unlink()
        oras(home, "pull", *credentials, target)
        assert (home / "model.bin").read_bytes() == b"weights" * 1000


class TestRefusals:
    def test_another_users_repository_is_refused(
        self, platform: PlatformServer, registry: RegistrySupervisor, tmp_path: Path
    ) -> None:
        alice, bob = platform.new_user(), platform.new_user()
        alice_crane = crane_for(registry, tmp_path / "alice", alice)
        alice_crane.push_random(f"{alice.user_id}/private", 1024)
        bob_crane = crane_for(registry, tmp_path / "bob", bob)
        pushed = bob_crane.push_random(f"{alice.user_id}/private", 1024, check=False)
        assert pushed.returncode != 0
        assert f"under its own namespace {bob.user_id}/" in pushed.stderr
        pulled = bob_crane.digest(f"{alice.user_id}/private", check=False)
        assert pulled.returncode != 0
        assert "refused" in pulled.stderr

    def test_anonymous_clients_are_refused(
        self, platform: PlatformServer, registry: RegistrySupervisor, tmp_path: Path
    ) -> None:
        alice = platform.new_user()
        crane_for(registry, tmp_path / "alice", alice).push_random(f"{alice.user_id}/app", 1024)
        anonymous = crane_for(registry, tmp_path / "anonymous", None)
        pulled = anonymous.digest(f"{alice.user_id}/app", check=False)
        assert pulled.returncode != 0
        assert "API key" in pulled.stderr
        pushed = anonymous.push_random(f"{alice.user_id}/app", 1024, check=False)
        assert pushed.returncode != 0
        direct = httpx.get(f"{registry.url}/v2/{alice.user_id}/app/tags/list")
        assert direct.status_code == 401

    def test_a_wrong_key_is_refused(
        self, platform: PlatformServer, registry: RegistrySupervisor, tmp_path: Path
    ) -> None:
        alice = platform.new_user()
        crane = Crane(f"localhost:{registry.settings.port}", tmp_path / "wrong")
        crane.login(alice.key[:-4] + "AAAA")
        pushed = crane.push_random(f"{alice.user_id}/app", 1024, check=False)
        assert pushed.returncode != 0
        assert "API key" in pushed.stderr

    def test_an_admin_pulls_any_users_image(
        self, platform: PlatformServer, registry: RegistrySupervisor, tmp_path: Path
    ) -> None:
        alice = platform.new_user()
        alice_crane = crane_for(registry, tmp_path / "alice", alice)
        alice_crane.push_random(f"{alice.user_id}/app", 1024)
        admin = crane_for(registry, tmp_path / "admin", platform.admin)
        assert (
            admin.digest(f"{alice.user_id}/app").stdout
            == alice_crane.digest(f"{alice.user_id}/app").stdout
        )
