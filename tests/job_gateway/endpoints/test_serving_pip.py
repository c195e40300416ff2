"""Custom endpoints with pip= requirements on real Ray Serve, runc and the default image: the
replica installs them (once per node, image and list: pip's output is in its logs) before its
container starts, and the class imports them; a requirement pip cannot install fails the
endpoint PipInstallFailed with pip's words, never Running, billed nothing.

The packages come from a find-links directory of wheels made here, and the index is a
directory that is not there: no build reaches the internet.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from job_gateway.sandbox.settings import SandboxSettings
from tests.job_gateway.endpoints import serve_classes
from tests.job_gateway.endpoints.factories import (
    custom_endpoint,
    read_logs,
    serve,
    stream_lines,
    wait_for,
    wait_running,
)
from tests.job_gateway.gateway_factories import GatewayServer
from tests.job_gateway.sandbox.pip_probes import local_wheel
from tests.support.sandbox import sandbox_config

pytestmark = [pytest.mark.kubeapi, pytest.mark.timeout(600)]

GREETING = "hello from a package of pip="
MISSING = "gridweave-no-such-package-7c1e==1.0"


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="gw-endpoint-pip-"))
    directory.chmod(0o755)  # every container's uid passes through to its environment
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def package(workdir: Path) -> str:
    """The requirement of a wheel in the module's find-links directory."""
    links = workdir / "links"
    links.mkdir(mode=0o755)
    return local_wheel(links, "gridweave-probe-greeting", "1.0", f"GREETING = {GREETING!r}\n")


@pytest.fixture(scope="module")
def sandbox_settings(workdir: Path, package: str) -> SandboxSettings:
    """The gateway's sandbox (runc, the default image) with a pip cache of this module's own,
    its find-links directory and no index."""
    return SandboxSettings(
        rootfs=sandbox_config().rootfs,
        pip_dir=workdir / "pip",
        pip_find_links=str(workdir / "links"),
        pip_index_url="file:///gridweave-no-index",
    )


def built(sandbox: SandboxSettings) -> list[str]:
    """The environments in the module's pip cache."""
    return [p.name for p in sandbox.pip_dir.iterdir() if not p.name.startswith(".")]


class TestPipEndpoints:
    def test_a_class_imports_its_requirements_built_once_per_node(
        self, gateway: GatewayServer, package: str, sandbox_settings: SandboxSettings
    ) -> None:
        first = custom_endpoint(gateway, serve_classes.UsesItsPackage, pip=[package])
        view = wait_running(gateway, first, timeout=300)
        assert view["pip"] == [package]
        answer = serve.post(f"{view['url']}/greeting").json()
        assert answer == {
            "greeting": GREETING,
            "file": "/opt/gridweave/env/gridweave_probe_greeting.py",
        }
        logs = "\n".join(stream_lines(read_logs(gateway, first), "stderr"))
        assert f"gridweave: installing {package}" in logs
        assert "Successfully installed gridweave-probe-greeting-1.0" in logs
        second = custom_endpoint(gateway, serve_classes.UsesItsPackage, pip=[package])
        view = wait_running(gateway, second, timeout=300)
        assert serve.post(f"{view['url']}/greeting").json()["greeting"] == GREETING
        logs = "\n".join(stream_lines(read_logs(gateway, second), "stderr"))
        assert "gridweave: installing" not in logs  # the first one's environment
        assert len(built(sandbox_settings)) == 1

    def test_a_requirement_pip_cannot_install_fails_the_endpoint_with_pips_words(
        self, gateway: GatewayServer
    ) -> None:
        endpoint_id = custom_endpoint(gateway, serve_classes.Greeter, pip=[MISSING])
        view = wait_for(gateway, endpoint_id, lambda v: v["phase"] == "Failed", timeout=300)
        assert view["reason"] == "PipInstallFailed"
        assert view["message"].startswith("pip could not install the requirements: ERROR:")
        assert f"No matching distribution found for {MISSING}" in view["message"]
        assert view["started_at"] is None and view["billed_seconds"] == 0  # it never ran
