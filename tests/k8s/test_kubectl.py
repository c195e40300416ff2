"""kubectl (the pinned build beside the apiserver) works against the API the tests run."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import config as k8s_config

from gridweave_controller import CrdClient
from gridweave_controller._kube_store import KubeStore
from gridweave_controller.store import GROUP, JOBS, VERSION
from tests.support.kubeapi import KubeAPI, KubeAPIUnavailable, kubectl_path
from tests.support.unavailable import fail_or_skip

pytestmark = pytest.mark.kubeapi

KUBECTL_TIMEOUT_S = 60


class Kubectl:
    """Runs the pinned kubectl against one cluster and namespace."""

    def __init__(self, binary: Path, kubeconfig: Path, namespace: str) -> None:
        self.base = [str(binary), f"--kubeconfig={kubeconfig}", f"--namespace={namespace}"]

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """Run kubectl; the result whatever its exit code."""
        return subprocess.run(
            [*self.base, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=KUBECTL_TIMEOUT_S,
            check=False,
        )

    def ok(self, *args: str, stdin: str | None = None) -> str:
        """Run kubectl, assert it succeeded, return its stdout."""
        result = self.run(*args, stdin=stdin)
        assert result.returncode == 0, result.stderr
        return result.stdout

    def apply(self, manifest: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
        """``kubectl apply -f -`` of one manifest."""
        return self.run("apply", "-f", "-", *args, stdin=yaml.safe_dump(manifest))

    def popen(self, *args: str) -> subprocess.Popen[str]:
        """Start a long-running kubectl (a watch)."""
        return subprocess.Popen(
            [*self.base, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )


def table(out: str) -> list[dict[str, str]]:
    """kubectl's table output as rows keyed by column (empty cells kept)."""
    header, *lines = out.splitlines()
    names = header.split()
    starts = [header.index(name) for name in names]
    ends = [*starts[1:], None]
    return [
        {name: line[a:b].strip() for name, a, b in zip(names, starts, ends, strict=True)}
        for line in lines
    ]


def job_manifest(name: str, **spec: Any) -> dict[str, Any]:
    """A GridweaveJob as a user would write it: no labels, only the required spec."""
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "GridweaveJob",
        "metadata": {"name": name},
        "spec": {"userId": "alice", "functionRef": "s3://fns/f.pkl", "vramMb": 512} | spec,
    }


@pytest.fixture(scope="module")
def kubectl_binary(kubeapi: KubeAPI) -> Path:
    """The pinned kubectl (built with the apiserver)."""
    try:
        return kubectl_path()
    except KubeAPIUnavailable as exc:
        fail_or_skip("kubectl", exc)


@pytest.fixture
def kubectl(kubectl_binary: Path, kubeapi: KubeAPI, kube_namespace: str) -> Kubectl:
    """kubectl on the test's own namespace."""
    return Kubectl(kubectl_binary, kubeapi.kubeconfig, kube_namespace)


@pytest.fixture
def store(kubeapi: KubeAPI) -> Iterator[KubeStore]:
    """The controller's raw store on the same cluster (admin credentials)."""
    api_client = k8s_config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(kubeapi.kubeconfig)
    )
    store = KubeStore(api_client)
    try:
        yield store
    finally:
        store.close()


class TestDiscovery:
    def test_api_resources_lists_both_kinds_with_short_names(self, kubectl: Kubectl) -> None:
        out = kubectl.ok("api-resources", f"--api-group={GROUP}", "--no-headers")
        rows = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
        assert rows["gridweavejobs"][1:] == ["gwj", f"{GROUP}/{VERSION}", "true", "GridweaveJob"]
        assert rows["gridweaveendpoints"][1:4] == ["gwe", f"{GROUP}/{VERSION}", "true"]

    def test_core_api_and_version_are_served(self, kubectl: Kubectl) -> None:
        version = json.loads(kubectl.ok("version", "-o", "json"))
        assert version["serverVersion"]["gitVersion"].startswith("v1.")
        assert "namespaces" in kubectl.ok("api-resources", "--api-group=", "-o", "name")

    def test_explain_shows_the_schema_and_its_descriptions(self, kubectl: Kubectl) -> None:
        out = kubectl.ok("explain", "gridweavejobs.spec")
        for field in ("userId", "functionRef", "vramMb", "gpuCount", "vendor"):
            assert field in out
        assert "URI of the pickled function in object storage" in out
        assert "<empty>" not in out and "what the user asked for" in out
        for described in ("GPUs the job gets", "the GPU maker", "before it ends TimedOut"):
            assert described in out
        status = kubectl.ok("explain", "gridweaveendpoints.status")
        assert "<empty>" not in status and "Pending -> Deploying -> Running" in status

    def test_the_admin_kubeconfig_looks_in_the_gridweave_namespace(
        self, kubectl_binary: Path, kubeapi: KubeAPI
    ) -> None:
        """`kubectl get gwj` with no -n lists the platform's jobs (the launcher's own API)."""
        if not kubeapi.started_here:
            pytest.skip("an external cluster's kubeconfig is its owner's")
        config = yaml.safe_load(kubeapi.kubeconfig.read_text())
        assert config["contexts"][0]["context"]["namespace"] == "gridweave"
        name = f"kubectl-default-ns-{time.monotonic_ns() % 10**9}"
        in_gridweave = Kubectl(kubectl_binary, kubeapi.kubeconfig, "gridweave")
        assert in_gridweave.apply(job_manifest(name)).returncode == 0
        try:
            plain = [str(kubectl_binary), f"--kubeconfig={kubeapi.kubeconfig}", "get", "gwj"]
            listed = subprocess.run(plain, capture_output=True, text=True, timeout=60, check=True)
            assert name in listed.stdout
        finally:
            in_gridweave.ok("delete", "gwj", name)


class TestPrinterColumns:
    def test_a_new_job_shows_pending_then_its_placement(
        self, kubectl: Kubectl, store: KubeStore, kube_namespace: str
    ) -> None:
        assert "created" in kubectl.apply(job_manifest("cols", gpuCount=2)).stdout
        [row] = table(kubectl.ok("get", "gwj", "cols", "-o", "wide"))
        # -o wide adds the columns of priority 1 (PRIORITY, the spec default 0)
        assert list(row) == ["NAME", "PHASE", "NODE", "GPUS", "VRAM", "AGE", "PRIORITY"]
        assert row | {"AGE": ""} == {
            "NAME": "cols",
            "PHASE": "Pending",
            "NODE": "",
            "GPUS": "2",
            "VRAM": "512",
            "AGE": "",
            "PRIORITY": "0",
        }
        status = {"phase": "Allocated", "node": "gpu-node-1", "gpuIndices": [0, 1]}
        store.patch_status(kube_namespace, JOBS, "cols", {"status": status})
        [row] = table(kubectl.ok("get", "gwj", "cols", "-o", "wide"))
        assert (row["PHASE"], row["NODE"]) == ("Allocated", "gpu-node-1")

    def test_endpoint_columns(self, kubectl: Kubectl) -> None:
        manifest = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "GridweaveEndpoint",
            "metadata": {"name": "ep"},
            "spec": {"userId": "alice", "mode": "vllm", "model": "m/7b", "vramMb": 1024},
        }
        assert kubectl.apply(manifest).returncode == 0
        [row] = table(kubectl.ok("get", "gwe", "-o", "wide"))
        assert list(row) == ["NAME", "PHASE", "NODE", "GPUS", "VRAM", "HEALTH", "URL", "AGE"]
        assert (row["NAME"], row["PHASE"], row["GPUS"], row["VRAM"]) == (
            "ep",
            "Pending",
            "1",
            "1024",
        )


class TestApply:
    def test_client_side_apply_creates_then_configures(self, kubectl: Kubectl) -> None:
        assert "gridweavejob.gridweave.io/cs created" in kubectl.apply(job_manifest("cs")).stdout
        changed = kubectl.apply(job_manifest("cs", vramMb=1024))
        assert "gridweavejob.gridweave.io/cs configured" in changed.stdout
        assert kubectl.ok("get", "gwj", "cs", "-o", "jsonpath={.spec.vramMb}") == "1024"

    def test_default_validation_refuses_an_unknown_field(self, kubectl: Kubectl) -> None:
        result = kubectl.apply(job_manifest("unknown", notAField=1))
        assert result.returncode != 0
        assert 'unknown field "spec.notAField"' in result.stderr

    def test_schema_violations_are_refused(self, kubectl: Kubectl) -> None:
        result = kubectl.apply(job_manifest("bad-vendor", vendor="intel"))
        assert result.returncode != 0
        assert 'spec.vendor: Unsupported value: "intel"' in result.stderr

    def test_server_side_apply_records_kubectl_as_the_manager(
        self, kubectl: Kubectl, store: KubeStore, kube_namespace: str
    ) -> None:
        result = kubectl.apply(job_manifest("ssa"), "--server-side")
        assert "gridweavejob.gridweave.io/ssa serverside-applied" in result.stdout
        again = kubectl.apply(job_manifest("ssa", vramMb=2048), "--server-side")
        assert again.returncode == 0, again.stderr
        obj = store.get(kube_namespace, JOBS, "ssa")
        assert obj["spec"]["vramMb"] == 2048
        managers = {(m["manager"], m["operation"]) for m in obj["metadata"]["managedFields"]}
        assert ("kubectl", "Apply") in managers


class TestWatch:
    def test_get_watch_sees_a_status_change(
        self, kubectl: Kubectl, store: KubeStore, kube_namespace: str
    ) -> None:
        kubectl.ok("create", "-f", "-", stdin=yaml.safe_dump(job_manifest("watched")))
        proc = kubectl.popen(
            "get", "gwj", "watched", "--watch", "-o", "jsonpath={.status.phase}{'\\n'}"
        )
        lines: queue.Queue[str] = queue.Queue()

        def read() -> None:
            for line in proc.stdout or ():
                lines.put(line.strip())

        threading.Thread(target=read, daemon=True).start()
        try:
            assert lines.get(timeout=KUBECTL_TIMEOUT_S) == "Pending"  # the current state first
            status = {"phase": "Allocated", "node": "n1", "gpuIndices": [0]}
            store.patch_status(kube_namespace, JOBS, "watched", {"status": status})
            deadline = time.monotonic() + KUBECTL_TIMEOUT_S
            seen = []
            while "Allocated" not in seen and time.monotonic() < deadline:
                seen.append(lines.get(timeout=max(deadline - time.monotonic(), 0.1)))
            assert "Allocated" in seen
        finally:
            proc.terminate()
            proc.wait(timeout=15)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()


class TestWhatTheTypedClientCannotDrive:
    """kubectl-made objects: refused when the services could not handle them."""

    @pytest.mark.parametrize("name", ["with.dot", "x" * 64])
    def test_a_name_the_client_cannot_take_is_refused(self, kubectl: Kubectl, name: str) -> None:
        result = kubectl.apply(job_manifest(name))
        assert result.returncode != 0
        assert "metadata.name: Invalid value: must be a DNS-1123 label" in result.stderr

    def test_every_name_kubectl_can_create_the_client_can_read_and_delete(
        self, kubectl: Kubectl, store: KubeStore, kube_namespace: str
    ) -> None:
        name = "a" * 63
        assert kubectl.apply(job_manifest(name)).returncode == 0
        typed = CrdClient(store, kube_namespace)
        assert typed.get_job(name).metadata.name == name
        typed.delete_job(name)
        assert "NotFound" in kubectl.run("get", "gwj", name).stderr

    def test_duplicate_gpu_indices_are_refused(self, kubectl: Kubectl) -> None:
        kubectl.ok("create", "-f", "-", stdin=yaml.safe_dump(job_manifest("dup")))
        patch = json.dumps({"status": {"phase": "Allocated", "gpuIndices": [1, 1]}})
        result = kubectl.run(
            "patch", "gwj", "dup", "--subresource=status", "--type=merge", "-p", patch
        )
        assert result.returncode != 0
        assert "status.gpuIndices[1]: Duplicate value: 1" in result.stderr

    def test_a_job_without_the_user_label_is_found_by_field_selector(
        self, kubectl: Kubectl, store: KubeStore, kube_namespace: str
    ) -> None:
        kubectl.ok("create", "-f", "-", stdin=yaml.safe_dump(job_manifest("by-kubectl")))
        other = job_manifest("someone-else") | {}
        other["spec"] = other["spec"] | {"userId": "bob"}
        kubectl.ok("create", "-f", "-", stdin=yaml.safe_dump(other))
        assert "labels" not in store.get(kube_namespace, JOBS, "by-kubectl")["metadata"]
        out = kubectl.ok("get", "gwj", "--field-selector", "spec.userId=alice", "-o", "name")
        assert out.split() == ["gridweavejob.gridweave.io/by-kubectl"]
        found = store.list(kube_namespace, JOBS, None, field_selector="spec.userId=alice")
        assert [obj["metadata"]["name"] for obj in found] == ["by-kubectl"]
