"""Job images for tests: the real registry beside a platform, the default image published in
it (as ``gridweave up`` does), and users' own images built on it with crane.

:func:`registry_beside` starts the registry for a platform whose settings name its port
(``registry_url``): the platform checks and pins a job's image there, and the registry takes
its tokens from the platform. A user's image is the default image plus one layer of files
(:meth:`JobImages.push_image`), so it runs a job exactly as the default one does.
"""

from __future__ import annotations

import io
import shutil
import tarfile
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gridweave_allinone.job_image import push_default_image
from gridweave_clients.platform import PlatformClient
from gridweave_runtime.job_images import DEFAULT_IMAGE_REPOSITORY
from job_gateway.sandbox.config import SandboxConfig
from platform_service.services.registry_tokens import publish_token
from platform_service.settings import PlatformSettings
from registry_service.supervisor import RegistrySupervisor
from tests.platform_service.factories import (
    PlatformServer,
    User,
    platform_settings,
    running_platform,
)
from tests.registry_service.factories import (
    Crane,
    RegistryToolsUnavailable,
    client_binaries,
    registry_binary,
    registry_settings,
    running_registry,
)
from tests.support.credit_server import INTERNAL_TOKEN
from tests.support.http_server import free_port
from tests.support.postgres import PostgresTestServer
from tests.support.sandbox import sandbox_config
from tests.support.unavailable import fail_or_skip

__all__ = [
    "JobImages",
    "images_on_a_platform",
    "registry_beside",
    "registry_tools_or_skip",
    "sandbox_with_image_cache",
]


def registry_tools_or_skip() -> None:
    """The registry and crane built (else skipped, failed under CI)."""
    try:
        registry_binary()
        client_binaries()
    except RegistryToolsUnavailable as exc:
        fail_or_skip("the image registry", exc)


def layer_of(files: Mapping[str, bytes]) -> bytes:
    """A layer tarball holding ``files`` (path in the image -> content), readable by all."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path, content in files.items():
            member = tarfile.TarInfo(path.lstrip("/"))
            member.size = len(content)
            member.mode = 0o755
            archive.addfile(member, io.BytesIO(content))
    return buffer.getvalue()


@dataclass
class JobImages:
    """A registry with the default image published, beside a running platform."""

    platform: PlatformServer
    supervisor: RegistrySupervisor
    workdir: Path

    @property
    def address(self) -> str:
        """``127.0.0.1:port``: the registry as a node pulls from it."""
        return self.supervisor.url.removeprefix("http://")

    def crane(self, user: User) -> Crane:
        """crane logged in as ``user`` (its own Docker config)."""
        port = self.address.rpartition(":")[2]
        crane = Crane(f"localhost:{port}", self.workdir / "crane" / user.user_id)
        crane.login(user.key)
        return crane

    def push_image(
        self,
        user: User,
        repository: str,
        files: Mapping[str, bytes],
        *,
        tag: str = "v1",
        on_default: bool = True,
        command: Sequence[str] = (),
    ) -> str:
        """Push ``repository:tag`` as ``user``: the default image (unless ``on_default`` is
        false: the layer alone) plus a layer of ``files``, with ``command`` as its CMD when
        given; its manifest's digest."""
        crane = self.crane(user)
        layer = self.workdir / f"layer-{len(files)}-{tag}.tar"
        layer.write_bytes(layer_of(files))
        base = ["-b", crane.ref(DEFAULT_IMAGE_REPOSITORY, "3.11")] if on_default else []
        crane.run("append", *base, "-f", str(layer), "-t", crane.ref(repository, tag))
        if not on_default:  # an image of its own says what it runs on, as a build would
            crane.run("mutate", "--set-platform", "linux/amd64", crane.ref(repository, tag))
        if command:
            crane.run("mutate", "--cmd", ",".join(command), crane.ref(repository, tag))
        return crane.digest(repository, tag).stdout.strip()

    def pull_token(self, user_id: str, repository: str) -> str:
        """The token the gateway gets for a node to pull ``repository`` as ``user_id``."""
        with PlatformClient(self.platform.url, INTERNAL_TOKEN) as client:
            return client.issue_pull_token(user_id, repository).token


@contextmanager
def registry_beside(
    platform: PlatformServer, settings: PlatformSettings, workdir: Path
) -> Iterator[JobImages]:
    """The registry on the port of ``settings.registry_url``, its tokens from ``platform``,
    with the default image published as ``gridweave/python:3.11``."""
    port = int(settings.registry_url.rpartition(":")[2])
    registry = registry_settings(platform.url, workdir / "registry", port=port)
    with running_registry(registry) as supervisor:
        token = publish_token(settings, DEFAULT_IMAGE_REPOSITORY)
        push_default_image(supervisor.url.removeprefix("http://"), token)
        yield JobImages(platform, supervisor, workdir)


@contextmanager
def images_on_a_platform(postgres: PostgresTestServer, workdir: Path) -> Iterator[JobImages]:
    """A platform of its own (a new database of ``postgres``) and the registry beside it,
    the default image published (the registry's tools built, else skipped)."""
    registry_tools_or_skip()
    with postgres.database("gwimages") as url:
        settings = platform_settings(
            url, workdir / "platform", registry_url=f"http://127.0.0.1:{free_port()}"
        )
        with (
            running_platform(settings) as platform,
            registry_beside(platform, settings, workdir) as images,
        ):
            yield images


@contextmanager
def sandbox_with_image_cache() -> Iterator[SandboxConfig]:
    """The node's sandbox with an image cache of its own, outside any 0700 directory (every
    job's uid passes through to its image), deleted afterwards."""
    directory = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="gw-images-"))
    directory.chmod(0o755)
    try:
        yield sandbox_config(image_dir=directory / "images")
    finally:
        shutil.rmtree(directory, ignore_errors=True)
