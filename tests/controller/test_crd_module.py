"""``gridweave_controller.crd``: configuration and the client seam."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from gridweave_controller import CrdClient, TransportError, crd
from gridweave_controller._kube_store import KubeStore
from tests.support.memory_store import MemoryStore


def write_kubeconfig(path: Path, server: str) -> Path:
    """A kubeconfig that points at ``server`` (nothing is contacted by init)."""
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path


@pytest.fixture(autouse=True)
def outside_a_cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No in-cluster service account; the module's client restored afterwards."""
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERAY_NAMESPACE", raising=False)
    saved = crd._ACTIVE.installed
    yield
    crd._ACTIVE.install(saved)  # closes the connection pool of any client a test installed


def test_explicit_kubeconfig_and_namespace(tmp_path: Path) -> None:
    config = write_kubeconfig(tmp_path / "config", "https://10.1.2.3:6443")
    client = crd.init_k8s_client(kubeconfig=config, namespace="team-a")
    assert client.namespace == "team-a"
    assert isinstance(client.store, KubeStore)
    assert client.store.api_client.configuration.host == "https://10.1.2.3:6443"


def test_kubeconfig_env_and_namespace_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = write_kubeconfig(tmp_path / "config", "https://10.9.9.9:6443")
    monkeypatch.setenv("KUBECONFIG", str(config))
    monkeypatch.setenv("KUBERAY_NAMESPACE", "gw-prod")
    client = crd.init_k8s_client()
    assert client.namespace == "gw-prod"
    assert isinstance(client.store, KubeStore)
    assert client.store.api_client.configuration.host == "https://10.9.9.9:6443"


def test_default_namespace_is_gridweave(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp_path / "c", "https://h:1")))
    assert crd.init_k8s_client().namespace == "gridweave"


def test_no_configuration_is_a_transport_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(TransportError):
        crd.init_k8s_client()


def test_use_client_points_every_function_at_that_client() -> None:
    store = MemoryStore()
    crd.use_client(CrdClient(store, "team-b"))
    job = crd.create_job("job-1", "alice", "s3://f", vram_mb=1)
    assert job.metadata.namespace == "team-b"
    assert [j.name for j in crd.list_jobs()] == ["job-1"]
    assert store.calls["create"] == 1


def test_first_call_initializes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(tmp_path / "c", "https://h:1")))
    monkeypatch.setenv("KUBERAY_NAMESPACE", "lazy")
    crd._ACTIVE.install(None)
    with pytest.raises(TransportError):  # nothing listens there; but init happened
        crd.get_job("job-1")
    installed = crd._ACTIVE.installed
    assert installed is not None and installed.namespace == "lazy"
