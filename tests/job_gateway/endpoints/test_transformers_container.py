"""A transformers endpoint's model is loaded and served in its owner's container (runc, the
default image), never in the replica: the server runs as the owner's uid, a model its uid
cannot read is copied for it and the copy deleted with the replica (swept once the replica
is gone), a link leading out of the model directory is refused, and a directory that is no
model fails the start saying why."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gridweave_runtime.storage import StorageConfig
from job_gateway.endpoints.replica import ReplicaConfig
from job_gateway.endpoints.sandboxed_backend import SandboxedBackend
from job_gateway.sandbox.container_names import STAGING_DIR, sweep_orphans
from job_gateway.sandbox.settings import SandboxConfig
from tests.job_gateway.endpoints.factories import tiny_gpt2_in_subprocess
from tests.support.sandbox import sandbox_config

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def sandbox() -> SandboxConfig:
    return sandbox_config()


@pytest.fixture(scope="module")
def private_gpt2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny GPT-2 in a directory only root may read (as an operator's may be)."""
    directory = tiny_gpt2_in_subprocess(tmp_path_factory.mktemp("private-gpt2"))
    directory.chmod(0o700)
    return directory


def _config(
    sandbox: SandboxConfig, tmp_path: Path, model_ref: str, owner: str = "transformers-owner"
) -> ReplicaConfig:
    return ReplicaConfig(
        endpoint_id="llm-contained",
        mode="transformers",
        storage=StorageConfig(root=str(tmp_path / "objects")),
        key_digest="unused",
        model="tiny-gpt2",
        model_ref=model_ref,
        sandbox=sandbox,
        owner=owner,
    )


def _server_uids() -> list[int]:
    """The real uid of every process running the transformers server on this machine."""
    uids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            status = (entry / "status").read_text()
        except OSError:
            continue
        if b"gridweave_transformers" in command:
            uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
            uids.append(int(uid_line.split()[1]))
    return uids


@pytest.fixture(scope="module")
def served(
    sandbox: SandboxConfig, private_gpt2: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SandboxedBackend]:
    backend = SandboxedBackend.start(
        _config(sandbox, tmp_path_factory.mktemp("replica"), str(private_gpt2))
    )
    try:
        yield backend
    finally:
        backend.close()


def _client(backend: SandboxedBackend) -> httpx.Client:
    transport = httpx.HTTPTransport(uds=str(backend.container.socket_path))
    return httpx.Client(transport=transport, base_url="http://replica", timeout=60)


class TestContainedModel:
    def test_the_model_answers_openais_routes_from_the_container(
        self, served: SandboxedBackend
    ) -> None:
        with _client(served) as client:
            models = client.get("/v1/models").json()
            completion = client.post(
                "/v1/completions", json={"prompt": "the quick brown", "max_tokens": 4}
            ).json()
            refused = client.post("/v1/completions", json={"prompt": 3})
        assert models["data"][0]["id"] == "tiny-gpt2"
        assert completion["usage"] == {
            "prompt_tokens": 3,
            "completion_tokens": 4,
            "total_tokens": 7,
        }
        assert refused.status_code == 400
        assert "prompt must be a string" in refused.json()["error"]["message"]

    def test_the_server_runs_as_the_owners_uid_on_a_copy_made_for_it(
        self, served: SandboxedBackend, private_gpt2: Path
    ) -> None:
        host_uid = served.container.spec.host_uid
        assert _server_uids() == [host_uid] and host_uid not in (0, os.getuid())
        assert served.staging is not None
        copy = served.staging / "model"
        assert (copy / "config.json").read_bytes() == (private_gpt2 / "config.json").read_bytes()
        assert copy.stat().st_uid == host_uid and (copy / "config.json").stat().st_uid == host_uid
        assert private_gpt2.stat().st_uid == 0  # the operator's directory is left as it was

    def test_closing_the_replica_ends_the_server_and_deletes_the_copy(
        self, sandbox: SandboxConfig, private_gpt2: Path, tmp_path: Path
    ) -> None:
        config = _config(sandbox, tmp_path, str(private_gpt2), owner="transformers-closer")
        backend = SandboxedBackend.start(config)
        staging, host_uid = backend.staging, backend.container.spec.host_uid
        assert staging is not None and staging.is_dir() and host_uid in _server_uids()
        backend.close()
        assert not staging.exists()
        assert host_uid not in _server_uids()


def _staged(sandbox: SandboxConfig) -> set[str]:
    staging = sandbox.state_dir / STAGING_DIR
    return {path.name for path in staging.iterdir()} if staging.is_dir() else set()


class TestRefusedModels:
    def test_a_link_out_of_the_model_directory_is_refused(
        self, sandbox: SandboxConfig, tmp_path: Path
    ) -> None:
        model = tmp_path / "model"
        model.mkdir()
        (model / "config.json").symlink_to(sandbox.state_dir / "uids.json")
        staged_before = _staged(sandbox)
        with pytest.raises(RuntimeError, match="links outside the model directory"):
            SandboxedBackend.start(_config(sandbox, tmp_path, str(model)))
        assert _staged(sandbox) == staged_before  # nothing copied, nothing left

    def test_a_directory_that_is_no_model_fails_the_start_with_why(
        self, sandbox: SandboxConfig, tmp_path: Path
    ) -> None:
        model = tmp_path / "not-a-model"
        model.mkdir()
        (model / "notes.txt").write_text("no weights here")
        with pytest.raises(RuntimeError) as failed:
            SandboxedBackend.start(_config(sandbox, tmp_path, str(model)))
        assert "the model could not be loaded" in str(failed.value)

    def test_a_missing_directory_is_named(self, sandbox: SandboxConfig, tmp_path: Path) -> None:
        with pytest.raises(RuntimeError, match="does-not-exist.*does not exist"):
            SandboxedBackend.start(_config(sandbox, tmp_path, str(tmp_path / "does-not-exist")))


def test_a_copy_whose_replica_died_is_swept(sandbox: SandboxConfig) -> None:
    finished = subprocess.Popen(["true"])  # noqa: S607
    finished.wait()
    staging = sandbox.state_dir / STAGING_DIR
    orphan = staging / f"gw-{finished.pid}-1-1"
    ours = staging / f"gw-{os.getpid()}-999-1"
    for directory in (orphan, ours):
        (directory / "model").mkdir(parents=True)
    try:
        swept = sweep_orphans(sandbox.runtime, sandbox.state_dir)
        assert orphan.name in swept and not orphan.exists()
        assert ours.is_dir()  # its replica (this process) lives
    finally:
        shutil.rmtree(ours, ignore_errors=True)
