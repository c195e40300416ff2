"""A job's own image at the platform, on the real registry, gateway and credit_service: the
image checked against the user's rights and pinned to its digest before any credit is held;
another user's private image, a missing one and a foreign registry refused naming it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from gridweave_runtime.job_images import DEFAULT_IMAGE
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.factories import (
    PlatformServer,
    User,
    platform_settings,
    running_platform,
    submit_body,
)
from tests.support.credit_server import CreditServer
from tests.support.http_server import free_port
from tests.support.job_images import JobImages, registry_beside, registry_tools_or_skip

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]


@pytest.fixture(scope="module")
def images(
    platform_database: str,
    credit: CreditServer,
    metering: httpx.Client,
    gateway: GatewayServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[JobImages]:
    """The platform calling credit_service, the gateway and the registry beside it."""
    registry_tools_or_skip()
    workdir = tmp_path_factory.mktemp("job-images")
    settings = platform_settings(
        platform_database,
        workdir / "platform",
        credit_service_url=credit.url,
        metering_service_url=str(metering.base_url),
        gateway_url=gateway.url,
        storage_dir=gateway.storage_dir,
        registry_url=f"http://127.0.0.1:{free_port()}",
    )
    with (
        running_platform(settings) as platform,
        registry_beside(platform, settings, workdir) as images,
    ):
        yield images


@pytest.fixture(scope="module")
def platform(images: JobImages) -> PlatformServer:
    return images.platform


@pytest.fixture(scope="module")
def alice(platform: PlatformServer, credit: CreditServer) -> User:
    user = platform.new_user()
    credit.fund(user.user_id, 10**9)
    return user


@pytest.fixture(scope="module")
def bob(platform: PlatformServer, credit: CreditServer) -> User:
    user = platform.new_user()
    credit.fund(user.user_id, 10**9)
    return user


@pytest.fixture(scope="module")
def alice_tools(images: JobImages, alice: User) -> tuple[str, str]:
    """alice's private image ``<alice>/tools:v1`` and its digest."""
    repository = f"{alice.user_id}/tools"
    return repository, images.push_image(alice, repository, {"opt/tools/a.txt": b"a"})


def _submit(platform: PlatformServer, user: User, image: str, **extra: Any) -> httpx.Response:
    return platform.http.post(
        "/v1/jobs", json=submit_body(image=image, **extra), headers=user.headers
    )


class TestImage:
    def test_an_own_image_is_pinned_to_its_digest_in_the_job(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User, alice_tools: Any
    ) -> None:
        repository, digest = alice_tools
        response = _submit(platform, alice, f"{repository}:v1")
        assert response.status_code == 201, response.text
        body = response.json()
        assert body["image"] == f"{repository}@{digest}"
        assert gateway.crd.get_job(body["job_id"]).spec.image == f"{repository}@{digest}"
        read = platform.http.get(f"/v1/jobs/{body['job_id']}", headers=alice.headers)
        assert read.json()["image"] == f"{repository}@{digest}"

    def test_the_public_default_image_and_a_digest_are_taken(
        self, platform: PlatformServer, alice: User, alice_tools: Any
    ) -> None:
        public = _submit(platform, alice, DEFAULT_IMAGE)
        assert public.status_code == 201, public.text
        assert public.json()["image"].startswith("gridweave/python@sha256:")
        repository, digest = alice_tools
        pinned = _submit(platform, alice, f"{repository}@{digest}")
        assert pinned.json()["image"] == f"{repository}@{digest}"

    def test_another_users_private_image_is_refused_before_any_hold(
        self, platform: PlatformServer, credit: CreditServer, bob: User, alice_tools: Any
    ) -> None:
        repository, _ = alice_tools
        before = credit.account(bob.user_id)
        response = _submit(platform, bob, f"{repository}:v1")
        assert response.status_code == 403, response.text
        error = response.json()["error"]
        assert error["code"] == "image_refused" and error["image"] == repository
        assert error["field"] == "image" and repository in error["message"]
        assert credit.account(bob.user_id) == before  # nothing held, nothing spent
        assert platform.http.get("/v1/jobs", headers=bob.headers).json()["jobs"] == []

    def test_a_shared_image_runs_for_the_user_it_is_shared_with(
        self,
        platform: PlatformServer,
        images: JobImages,
        alice: User,
        bob: User,
        alice_tools: Any,
    ) -> None:
        repository = f"{alice.user_id}/shared"
        digest = images.push_image(alice, repository, {"s.txt": b"s"})
        shared = platform.http.post(
            "/v1/registry/shares",
            json={"repository": repository, "user_id": bob.user_id},
            headers=alice.headers,
        )
        assert shared.status_code in (200, 201), shared.text
        response = _submit(platform, bob, f"{repository}:v1")
        assert response.status_code == 201, response.text
        assert response.json()["image"] == f"{repository}@{digest}"

    @pytest.mark.parametrize("reference", [":nosuchtag", "-missing:v1"])
    def test_a_missing_image_is_404_naming_it(
        self,
        platform: PlatformServer,
        credit: CreditServer,
        alice: User,
        alice_tools: Any,
        reference: str,
    ) -> None:
        repository, _ = alice_tools
        held = credit.account(alice.user_id)["held"]
        image = f"{repository}{reference}"
        response = _submit(platform, alice, image)
        assert response.status_code == 404, response.text
        error = response.json()["error"]
        assert error["code"] == "image_not_found" and error["field"] == "image"
        assert image.split(":")[0] in error["message"]
        assert credit.account(alice.user_id)["held"] == held

    @pytest.mark.parametrize(
        "image", ["docker.io/library/python:3.11", "localhost:30500/gridweave/python:3.11"]
    )
    def test_another_registry_is_422_saying_what_to_write(
        self, platform: PlatformServer, alice: User, image: str
    ) -> None:
        response = _submit(platform, alice, image)
        assert response.status_code == 422, response.text
        error = response.json()["error"]
        assert error["fields"][0]["field"] == "image"
        assert "registry host" in error["fields"][0]["message"]

    def test_a_retry_with_the_same_key_answers_the_same_job(
        self, platform: PlatformServer, alice: User, alice_tools: Any
    ) -> None:
        repository, _ = alice_tools
        headers = {**alice.headers, "Idempotency-Key": "image-retry-1"}
        body = submit_body(image=f"{repository}:v1")
        first = platform.http.post("/v1/jobs", json=body, headers=headers)
        again = platform.http.post("/v1/jobs", json=body, headers=headers)
        assert (first.status_code, again.status_code) == (201, 200)
        assert first.json()["job_id"] == again.json()["job_id"]
        other = platform.http.post(
            "/v1/jobs", json=submit_body(image=DEFAULT_IMAGE), headers=headers
        )
        assert other.status_code == 409
        assert other.json()["error"]["differing_fields"] == ["image"]
