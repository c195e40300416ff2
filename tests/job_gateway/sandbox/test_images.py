"""A job's own image on its node, on the real registry, skopeo, umoci and runc: pulled with
its owner's token, unpacked once per digest, run read-only, refused to anyone else, evicted
least recently used but never while a container runs it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import cloudpickle
import pytest

from gridweave_clients.errors import ServiceRefused
from job_gateway.sandbox.attempt import SandboxedJob, container_spec
from job_gateway.sandbox.container import Container
from job_gateway.sandbox.images import (
    ImagePull,
    ImagePullFailed,
    evict_images,
    unpacked_image,
)
from job_gateway.sandbox.settings import SandboxConfig
from tests.job_gateway.sandbox import image_probes
from tests.platform_service.factories import User
from tests.support.job_images import JobImages, images_on_a_platform, sandbox_with_image_cache
from tests.support.postgres import PostgresTestServer
from tests.support.sandbox import run_function

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(300)]

MARKER = b"made for alice's tools image\n"


@pytest.fixture(scope="module", autouse=True)
def _functions_by_value() -> Iterator[None]:
    """This module's functions travel by value, as a user's own module does."""
    cloudpickle.register_pickle_by_value(image_probes)
    yield
    cloudpickle.unregister_pickle_by_value(image_probes)


@pytest.fixture(scope="module")
def images(
    postgres: PostgresTestServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[JobImages]:
    with images_on_a_platform(postgres, tmp_path_factory.mktemp("images")) as images:
        yield images


@pytest.fixture(scope="module")
def sandbox() -> Iterator[SandboxConfig]:
    with sandbox_with_image_cache() as config:
        yield config


@pytest.fixture(scope="module")
def alice(images: JobImages) -> User:
    return images.platform.new_user()


@pytest.fixture(scope="module")
def alice_tools(images: JobImages, alice: User) -> str:
    """alice's private image, pinned: the default image plus /opt/tools/{marker,hello}."""
    repository = f"{alice.user_id}/tools"
    digest = images.push_image(
        alice,
        repository,
        {"opt/tools/marker.txt": MARKER, "opt/tools/hello.py": b"GREETING = 'hi from tools'\n"},
    )
    return f"{repository}@{digest}"


def _pull(images: JobImages, user: User, image: str) -> ImagePull:
    token = images.pull_token(user.user_id, image.partition("@")[0])
    return ImagePull(image=image, registry=images.address, token=token)


class TestPull:
    def test_a_job_runs_in_its_owners_image_pulled_once(
        self, images: JobImages, sandbox: SandboxConfig, alice: User, alice_tools: str
    ) -> None:
        pull = _pull(images, alice, alice_tools)
        first = unpacked_image(sandbox.image_dir, pull)
        assert first.pull_seconds > 0 and first.size_bytes > 10_000_000
        assert first.rootfs == sandbox.image_dir / pull.digest_hex / "rootfs"
        assert ("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin") in (
            first.environment
        )
        marker, greeting, writable = run_function(
            sandbox, image_probes.read_marker_and_import, user=alice.user_id, image=first
        ).value
        assert (marker, greeting, writable) == (MARKER.decode(), "hi from tools", False)
        again = unpacked_image(sandbox.image_dir, pull)  # from the node's cache
        assert again.pull_seconds == 0 and again.rootfs == first.rootfs

    def test_the_default_image_has_none_of_it(self, sandbox: SandboxConfig, alice: User) -> None:
        assert run_function(sandbox, image_probes.tools_present, user=alice.user_id).value is False

    def test_another_users_private_image_gets_no_pull_token(
        self, images: JobImages, alice_tools: str
    ) -> None:
        bob = images.platform.new_user()
        with pytest.raises(ServiceRefused) as refused:
            images.pull_token(bob.user_id, alice_tools.partition("@")[0])
        assert refused.value.status_code == 403
        assert refused.value.code == "image_refused"
        assert alice_tools.partition("@")[0] in refused.value.message

    def test_a_token_for_another_repository_pulls_nothing(
        self, images: JobImages, sandbox: SandboxConfig, alice_tools: str
    ) -> None:
        bob = images.platform.new_user()
        bobs = images.pull_token(bob.user_id, f"{bob.user_id}/anything")
        pull = ImagePull(image=alice_tools, registry=images.address, token=bobs)
        cache = sandbox.image_dir.with_name("images-bob")
        with pytest.raises(ImagePullFailed) as failed:
            unpacked_image(cache, pull)
        assert "pulling" in str(failed.value)
        assert not (cache / pull.digest_hex).exists()  # nothing a job could run is left

    def test_an_image_without_python_fails_naming_it(
        self, images: JobImages, sandbox: SandboxConfig, alice: User
    ) -> None:
        repository = f"{alice.user_id}/bare"
        digest = images.push_image(alice, repository, {"data.txt": b"x"}, on_default=False)
        with pytest.raises(ImagePullFailed) as failed:
            unpacked_image(sandbox.image_dir, _pull(images, alice, f"{repository}@{digest}"))
        assert f"{repository}@{digest} has no python3" in str(failed.value)


class TestEviction:
    def test_least_recently_used_go_first_and_a_running_one_stays(
        self, images: JobImages, sandbox: SandboxConfig, alice: User, alice_tools: str
    ) -> None:
        cache = sandbox.image_dir.with_name("images-evict")
        config = dataclasses.replace(sandbox, image_dir=cache)
        old = unpacked_image(cache, _pull(images, alice, alice_tools))
        repository = f"{alice.user_id}/tools"
        newer_digest = images.push_image(alice, repository, {"v2.txt": b"2"}, tag="v2")
        newer = unpacked_image(cache, _pull(images, alice, f"{repository}@{newer_digest}"))
        job = SandboxedJob(alice.user_id, "nvidia", (0,), 1, {})
        running = Container(container_spec(config, job, old))  # holds the older image
        try:
            assert evict_images(cache, max_bytes=0) == [newer_digest.removeprefix("sha256:")]
            assert old.rootfs.is_dir() and not newer.rootfs.exists()
        finally:
            running.close()
        assert evict_images(cache, max_bytes=0) == [old.rootfs.parent.name]
        assert not old.rootfs.exists()
