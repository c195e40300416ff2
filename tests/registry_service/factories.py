"""The real registry (tools/registry) and the real clients (crane and oras, tools/registry-clients).

The registry runs under :class:`RegistrySupervisor` on a free loopback port, its tokens from
a platform reached as ``localhost`` (crane refuses a token realm on a loopback IP address).
Each :class:`Crane` keeps its own Docker config folder, so two users' logins never mix.
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from registry_service.settings import RegistrySettings
from registry_service.supervisor import RegistrySupervisor
from tests.support.credentials import service_auth
from tests.support.credit_server import INTERNAL_TOKEN
from tests.support.http_server import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]


class RegistryToolsUnavailable(RuntimeError):
    """The registry or its clients cannot be built here."""


def _built(script: str) -> Path:
    try:
        result = subprocess.run(
            [str(REPO_ROOT / "tools" / script / "build.sh")],
            capture_output=True,
            text=True,
            timeout=900,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise RegistryToolsUnavailable(f"tools/{script}/build.sh failed: {exc}") from exc
    return Path(result.stdout.strip().splitlines()[-1])


@cache
def registry_binary() -> Path:
    """The pinned distribution registry."""
    return _built("registry") / "registry"


@cache
def client_binaries() -> Path:
    """The folder holding the pinned crane and oras."""
    return _built("registry-clients")


def localhost_url(url: str) -> str:
    """``url`` with its loopback IP address named ``localhost``."""
    return url.replace("127.0.0.1", "localhost")


def registry_settings(platform_url: str, state_dir: Path, **overrides: Any) -> RegistrySettings:
    """Settings of a registry on a free port, its tokens from the platform at ``platform_url``."""
    values: dict[str, Any] = {
        **service_auth(INTERNAL_TOKEN),
        "state_dir": state_dir,
        "host": "127.0.0.1",
        "port": free_port(),
        "platform_url": localhost_url(platform_url),
        "reconcile_seconds": 3600,
        # a collection does not wait for push tokens to expire (its own test turns it on)
        "gc_drain_seconds": 0,
        **overrides,
    }
    return RegistrySettings(**values)


@contextmanager
def running_registry(
    settings: RegistrySettings, supervisor_type: type[RegistrySupervisor] = RegistrySupervisor
) -> Iterator[RegistrySupervisor]:
    """The registry started by ``supervisor_type``; stopped on exit."""
    supervisor = supervisor_type(settings, binary=registry_binary())
    try:
        supervisor.start()
        yield supervisor
    finally:
        supervisor.close()


def image_layer(size: int) -> bytes:
    """A layer tarball holding ``size`` random bytes (a new digest each time)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        member = tarfile.TarInfo("data.bin")
        member.size = size
        archive.addfile(member, io.BytesIO(os.urandom(size)))
    return buffer.getvalue()


@dataclass
class Crane:
    """crane with its own Docker config (one user's login) against one registry."""

    registry: str  # localhost:port
    home: Path

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``crane ARGS``; a failure raises unless ``check`` is false."""
        self.home.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "DOCKER_CONFIG": str(self.home), "HOME": str(self.home)}
        done = subprocess.run(
            [str(client_binaries() / "crane"), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"crane {' '.join(args)} failed:\n{done.stderr}")
        return done

    def login(self, api_key: str) -> None:
        """``crane auth login`` with the API key as the password."""
        self.run("auth", "login", self.registry, "-u", "gridweave", "-p", api_key)

    def ref(self, repository: str, tag: str = "latest") -> str:
        """``localhost:port/repository:tag``."""
        return f"{self.registry}/{repository}:{tag}"

    def push_random(
        self, repository: str, size: int, *, tag: str = "latest", check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Push a new image of one random layer of ``size`` bytes."""
        layer = self.home / "layer.tar"
        layer.parent.mkdir(parents=True, exist_ok=True)
        layer.write_bytes(image_layer(size))
        return self.run("append", "-f", str(layer), "-t", self.ref(repository, tag), check=check)

    def digest(
        self, repository: str, tag: str = "latest", *, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """``crane digest`` (a pull of the manifest)."""
        return self.run("digest", self.ref(repository, tag), check=check)


def oras(home: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``oras ARGS`` with its own config folder."""
    home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "DOCKER_CONFIG": str(home), "HOME": str(home)}
    done = subprocess.run(
        [str(client_binaries() / "oras"), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=home,
        timeout=120,
        check=False,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"oras {' '.join(args)} failed:\n{done.stderr}")
    return done
