"""gridweave_runtime.kubeapi: the PKI it keeps, and a state directory that survives restarts."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509
from kubernetes import client

from gridweave_runtime.kubeapi import (
    ADMIN_GROUP,
    KubeAPIError,
    KubeAPIServer,
    api_client_for,
    ensure_pki,
    free_port,
)
from tests.support.kubeapi import CRD_MANIFESTS, KubeAPI, KubeAPIUnavailable, build_binaries
from tests.support.unavailable import fail_or_skip


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _children() -> set[int]:
    """The live child processes of this test process."""
    me, found = str(os.getpid()), set()
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as stat_file:
                fields = stat_file.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == me:
            found.add(int(entry))
    return found


class TestPki:
    def test_every_file_is_made_and_keys_are_private(self, tmp_path: Path) -> None:
        pki = ensure_pki(tmp_path / "pki")
        for path in (pki.ca_key, pki.server_key, pki.admin_key, pki.service_account_key):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        admin = x509.load_pem_x509_certificate(pki.admin_cert.read_bytes())
        organizations = admin.subject.get_attributes_for_oid(x509.NameOID.ORGANIZATION_NAME)
        assert [o.value for o in organizations] == [ADMIN_GROUP]
        server = x509.load_pem_x509_certificate(pki.server_cert.read_bytes())
        names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert "localhost" in names.get_values_for_type(x509.DNSName)

    def test_a_second_run_keeps_every_file(self, tmp_path: Path) -> None:
        pki = ensure_pki(tmp_path)
        before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
        ensure_pki(tmp_path)
        assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before
        assert pki.service_account_pub.read_bytes() == before["service-account.pub"]

    def test_a_missing_leaf_is_reissued_by_the_same_ca(self, tmp_path: Path) -> None:
        pki = ensure_pki(tmp_path)
        ca = pki.ca_cert.read_bytes()
        server = pki.server_cert.read_bytes()
        pki.admin_cert.unlink()
        ensure_pki(tmp_path)
        assert pki.ca_cert.read_bytes() == ca and pki.server_cert.read_bytes() == server
        admin = x509.load_pem_x509_certificate(pki.admin_cert.read_bytes())
        admin.verify_directly_issued_by(x509.load_pem_x509_certificate(ca))

    def test_a_new_host_reissues_the_serving_certificate(self, tmp_path: Path) -> None:
        pki = ensure_pki(tmp_path)
        admin = pki.admin_cert.read_bytes()
        ensure_pki(tmp_path, hosts=("localhost", "127.0.0.1", "gw.example"))
        server = x509.load_pem_x509_certificate(pki.server_cert.read_bytes())
        names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert "gw.example" in names.get_values_for_type(x509.DNSName)
        assert pki.admin_cert.read_bytes() == admin


@pytest.fixture(scope="module")
def binaries(kubeapi: KubeAPI) -> Path:
    """The built etcd/kube-apiserver (only when this run starts local servers)."""
    if not kubeapi.started_here:
        pytest.skip("an external cluster is configured; nothing is started locally")
    try:
        return build_binaries()
    except KubeAPIUnavailable as exc:
        fail_or_skip("Kubernetes API server", exc)


def _processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line contains ``text``."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if text.encode() in cmdline.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def _run_module(state: Path, port: int, binaries: Path) -> bytes:
    """``python -m gridweave_runtime.kubeapi`` until ready; make a Namespace; SIGTERM it.

    Returns the admin kubeconfig it wrote.
    """
    proc = subprocess.Popen(
        [sys.executable, "-m", "gridweave_runtime.kubeapi", f"--state-dir={state}"]
        + [f"--port={port}"],
        env=os.environ | {"GRIDWEAVE_KUBEAPI_BIN": str(binaries)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(3)]
        kubeconfig = state / "admin.kubeconfig"
        assert lines[1] == f"export KUBECONFIG={kubeconfig}\n", proc.stderr
        kubectl = [str(binaries / "kubectl"), f"--kubeconfig={kubeconfig}"]
        made = subprocess.run(
            [*kubectl, "create", "namespace", "kept"], capture_output=True, text=True, timeout=60
        )
        assert made.returncode == 0, made.stderr
        return kubeconfig.read_bytes()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@pytest.mark.kubeapi
class TestStateDirectory:
    def test_the_module_runs_it_and_a_restart_keeps_data_and_kubeconfig(
        self, tmp_path: Path, binaries: Path
    ) -> None:
        state, port = tmp_path / "state", free_port()
        kubeconfig = _run_module(state, port, binaries)
        assert _processes_mentioning(str(state)) == []  # SIGTERM stopped etcd and apiserver

        server = KubeAPIServer(state, binaries=binaries, port=port, crd_manifests=CRD_MANIFESTS)
        try:
            server.start()
            assert server.kubeconfig.read_bytes() == kubeconfig  # same CA, client cert, URL
            with api_client_for(server.kubeconfig) as api_client:
                names = {
                    ns.metadata.name
                    for ns in client.CoreV1Api(api_client).list_namespace().items
                    if ns.metadata
                }
                crds = client.ApiextensionsV1Api(api_client).list_custom_resource_definition()
            assert {"kept", "gridweave"} <= names
            assert {c.metadata.name for c in crds.items if c.metadata} >= {
                "gridweavejobs.gridweave.io",
                "gridweaveendpoints.gridweave.io",
            }
            pids = server.pids
            assert len(pids) == 2
        finally:
            server.stop()
        assert not [pid for pid in pids if _alive(pid)]

    def test_a_failed_start_leaves_no_process(self, tmp_path: Path, binaries: Path) -> None:
        fake = tmp_path / "bin"
        fake.mkdir()
        (fake / "etcd").symlink_to(binaries / "etcd")
        (fake / "kube-apiserver").write_text("#!/bin/sh\necho no apiserver here >&2\nexit 3\n")
        (fake / "kube-apiserver").chmod(0o755)
        server = KubeAPIServer(tmp_path / "state", binaries=fake, durable=False)
        before = _children()
        with pytest.raises(KubeAPIError, match="kube-apiserver exited with 3") as caught:
            server.start(timeout_s=30)
        assert "no apiserver here" in str(caught.value)  # the log's tail is in the error
        assert _children() - before == set()  # etcd, already running, was stopped too
