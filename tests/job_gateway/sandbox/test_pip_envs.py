"""pip= environments on a node, on the real runtime (runc), the default image's pip and the
real PyPI: built once in a sandboxed container of the job's owner, reused by every job of
the same image and list, mounted read-only first on the path; a failed install fails the
job PipInstallFailed with pip's words, and a build reaches the index but not the node."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import socket
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cloudpickle
import pytest

from gridweave_runtime.storage import LocalObjectStore, StorageConfig, attempt_objects
from job_gateway.execution import worker
from job_gateway.execution.outcome import Outcome
from job_gateway.execution.worker import AttemptSpec, run_attempt
from job_gateway.sandbox.attempt import SandboxedJob, warm_containers
from job_gateway.sandbox.images import evict_images
from job_gateway.sandbox.pip_envs import PipInstallFailed, environment_key, pip_environment
from job_gateway.sandbox.settings import SandboxConfig
from job_gateway.sandbox.uids import user_uid
from tests.job_gateway.sandbox import pip_probes
from tests.job_gateway.sandbox.test_egress import node_address
from tests.support.sandbox import sandbox_config

pytestmark = pytest.mark.timeout(600)

SIX = ["six==1.16.0"]  # small, one pure wheel
MISSING = "gridweave-no-such-package-7c1e"


@pytest.fixture(scope="module")
def workdir() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="gw-pip-test-"))
    directory.chmod(0o755)  # every job's uid passes through to its environment
    cloudpickle.register_pickle_by_value(pip_probes)
    try:
        yield directory
    finally:
        warm_containers.close()
        cloudpickle.unregister_pickle_by_value(pip_probes)
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def sandbox(workdir: Path) -> SandboxConfig:
    """The node's sandbox with a pip cache of this module's own, and a find-links directory
    (the node's, mounted read-only into builds) for the probe's sdist."""
    links = workdir / "links"
    links.mkdir(mode=0o755)
    config = sandbox_config()
    pip = dataclasses.replace(config.pip, directory=workdir / "pip", find_links=str(links))
    return dataclasses.replace(config, pip=pip)


@pytest.fixture(autouse=True)
def no_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker outside Ray: asking for its node would start a local Ray."""
    monkeypatch.setattr(worker, "_ray_node_id", lambda: "")


@pytest.fixture
def storage(tmp_path: Path) -> StorageConfig:
    return StorageConfig(root=str(tmp_path / "objects"))


def run_job(
    sandbox: SandboxConfig,
    storage: StorageConfig,
    function: Any,
    *,
    user: str,
    pip: list[str],
) -> tuple[Outcome, str, Any]:
    """Run ``function()`` as an attempt of ``user`` with ``pip``, as a worker does: the
    outcome, the job's stderr, and the value (None when it failed)."""
    store = LocalObjectStore(storage.root)
    job_id = f"pip-{uuid.uuid4().hex[:10]}"
    function_ref = store.put(f"jobs/{job_id}/function.pkl", cloudpickle.dumps(function))
    args_ref = store.put(f"jobs/{job_id}/args.pkl", cloudpickle.dumps(((), {})))
    job = SandboxedJob(user, "nvidia", (0,), 1, {"CUDA_VISIBLE_DEVICES": "0"})
    spec = AttemptSpec(job_id, 0, function_ref, args_ref, storage, sandbox, job, pip=tuple(pip))
    outcome = run_attempt(spec)
    objects = attempt_objects(job_id, 0)
    stderr = store.get(store.uri(objects.stderr)).decode()
    value = None
    if outcome.status == "ok":
        value = cloudpickle.loads(store.get(store.uri(objects.result)))
    return outcome, stderr, value


def environments(sandbox: SandboxConfig) -> list[str]:
    directory = sandbox.pip.directory
    return (
        sorted(p.name for p in directory.iterdir() if not p.name.startswith("."))
        if (directory.is_dir())
        else []
    )


class TestAnEnvironment:
    def test_built_once_then_reused_by_every_job_of_the_same_list(
        self, sandbox: SandboxConfig, storage: StorageConfig
    ) -> None:
        first, first_log, value = run_job(
            sandbox, storage, pip_probes.uses_six, user="pip-alice", pip=SIX
        )
        assert first.status == "ok", (first, first_log)
        assert value["version"] == "1.16.0"
        assert value["file"] == "/opt/gridweave/env/six.py"
        assert value["path"][1:3] == ["/opt/gridweave", "/opt/gridweave/env"]  # runner first
        assert value["written"] == "OSError"  # read-only in the job's container
        assert first_log.count("gridweave: installing six==1.16.0") == 1  # the job's log
        assert "Successfully installed six-1.16.0" in first_log
        assert first.prepare_seconds > 0  # the build is prepare time: not billed
        again = [
            run_job(sandbox, storage, pip_probes.uses_six, user=user, pip=SIX)
            for user in ("pip-alice", "pip-bob")
        ]
        for outcome, log, reused in again:
            assert outcome.status == "ok" and reused["file"] == "/opt/gridweave/env/six.py"
            assert "gridweave: installing" not in log  # no build: the node's cache
        assert len(environments(sandbox)) == 1

    def test_a_job_without_pip_has_none(
        self, sandbox: SandboxConfig, storage: StorageConfig
    ) -> None:
        outcome, log, value = run_job(
            sandbox, storage, pip_probes.no_environment, user="pip-alice", pip=[]
        )
        assert outcome.status == "ok", log
        assert value == {"listed": [], "six": False}

    def test_an_environment_a_container_holds_is_never_evicted(
        self, sandbox: SandboxConfig, storage: StorageConfig
    ) -> None:
        outcome, log, _ = run_job(sandbox, storage, pip_probes.uses_six, user="pip-alice", pip=SIX)
        assert outcome.status == "ok", log
        (held,) = environments(sandbox)
        assert evict_images(sandbox.pip.directory, max_bytes=0) == []  # the warm container's
        warm_containers.close()
        assert evict_images(sandbox.pip.directory, max_bytes=0) == [held]
        assert environments(sandbox) == []


class TestAFailedInstall:
    def test_a_missing_package_fails_the_job_with_pips_words_billing_nothing(
        self, sandbox: SandboxConfig, storage: StorageConfig
    ) -> None:
        outcome, log, _ = run_job(
            sandbox, storage, pip_probes.uses_six, user="pip-alice", pip=[f"{MISSING}==1.0"]
        )
        assert outcome.status == "exception"
        assert outcome.reason == "PipInstallFailed"
        assert f"No matching distribution found for {MISSING}==1.0" in (outcome.message or "")
        assert f"ERROR: No matching distribution found for {MISSING}" in log  # the job's log
        assert not outcome.function_started  # billed no time
        leftovers = [p.name for p in sandbox.pip.directory.iterdir() if ".work-" in p.name]
        assert leftovers == []  # a failed build leaves nothing


class TestTheBuildsSandbox:
    def test_a_build_runs_as_the_owner_and_reaches_the_index_not_the_node(
        self, sandbox: SandboxConfig, tmp_path: Path
    ) -> None:
        name = f"gw-probe-{uuid.uuid4().hex[:8]}"
        with _listener() as port:
            own = node_address()
            targets = [
                ("127.0.0.1", port),
                (own, port),
                ("gateway", port),
                ("10.1.2.3", 80),
                ("pypi.org", 443),
            ]
            pip_probes.probe_sdist(Path(sandbox.pip.find_links or ""), name, targets)
            log = tmp_path / "build.log"
            with log.open("wb") as output, pytest.raises(PipInstallFailed):
                pip_environment(sandbox, "pip-prober", [name], output=output.fileno())
        found = re.search(r"GW-PROBE (\{.*\})", log.read_text())
        assert found, log.read_text()
        seen = json.loads(found.group(1))
        assert int(seen.pop("uid_map")[1]) == user_uid(sandbox.state_dir, "pip-prober")
        assert seen.pop("pypi.org:443") == "connected"  # a build always has egress
        assert "connected" not in seen.values(), seen

    def test_the_key_is_the_image_the_python_and_the_normalized_list(self) -> None:
        key = environment_key(["six==1.16.0", "numpy >=2"], image="base-1", python="python3.11")
        assert key == environment_key(
            ["numpy>=2", "six==1.16.0"], image="base-1", python="python3.11"
        )
        assert key != environment_key(["six==1.16.0"], image="base-1", python="python3.11")
        assert key != environment_key(
            ["six==1.16.0", "numpy>=2"], image="u/t@sha256:" + "a" * 64, python="python3.11"
        )
        assert key != environment_key(
            ["six==1.16.0", "numpy>=2"], image="base-1", python="python3.12"
        )


class _listener:
    """A TCP server on every address of the node (as a service bound to 0.0.0.0)."""

    def __enter__(self) -> int:
        self._server = socket.create_server(("0.0.0.0", 0))
        self._server.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()
        return int(self._server.getsockname()[1])

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                self._server.accept()[0].close()
            except OSError:
                continue

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(2)
        self._server.close()
