"""Start a real Kubernetes API server (apiextensions-apiserver) and etcd for tests.

The binaries come from ``tools/kubeapi/build.sh``: built from the Go modules pinned there,
cached outside the repository and keyed by the go.sum hash. This is the envtest recipe: no
nodes, no controllers, only the API. ``GRIDWEAVE_TEST_KUBECONFIG`` points the same code at
any real cluster instead (kind, k3s).
"""

from __future__ import annotations

import base64
import os
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from tests.support.certs import make_test_pki
from tests.support.http_server import free_port

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO_ROOT / "tools" / "kubeapi" / "build.sh"
CRD_MANIFESTS = (
    REPO_ROOT / "k8s" / "gridweave-job-crd.yaml",
    REPO_ROOT / "k8s" / "gridweave-endpoint-crd.yaml",
)
START_TIMEOUT_S = 90.0


class KubeAPIUnavailable(RuntimeError):
    """The real apiserver cannot be had here (no Go toolchain, build or start failed)."""


@dataclass(frozen=True)
class KubeAPI:
    """A reachable Kubernetes API: where its kubeconfig is and whether we started it."""

    kubeconfig: Path
    started_here: bool


def build_binaries() -> Path:
    """Build (or find in the cache) etcd and kube-apiserver; return their directory."""
    if override := os.environ.get("GRIDWEAVE_KUBEAPI_BIN"):
        return Path(override)
    result = subprocess.run(
        [str(BUILD_SCRIPT)], capture_output=True, text=True, check=False, timeout=3600
    )
    if result.returncode == 127:
        raise KubeAPIUnavailable("Go is not installed: cannot build the test Kubernetes API server")
    if result.returncode != 0:
        raise KubeAPIUnavailable(f"tools/kubeapi/build.sh failed:\n{result.stderr[-4000:]}")
    return Path(result.stdout.strip().splitlines()[-1])


def _kubeconfig(server: str, ca: bytes, cert: bytes | None, key: bytes | None) -> dict[str, object]:
    user: dict[str, object] = {}
    if cert is not None and key is not None:
        user = {
            "client-certificate-data": base64.b64encode(cert).decode(),
            "client-key-data": base64.b64encode(key).decode(),
        }
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "test",
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca).decode(),
                },
            }
        ],
        "users": [{"name": "admin", "user": user}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "admin"}}],
        "current-context": "test",
    }


def _wait_healthz(url: str, ca_file: Path, cert: Path, key: Path, procs: list[Popen]) -> None:
    context = ssl.create_default_context(cafile=str(ca_file))
    context.load_cert_chain(str(cert), str(key))
    deadline = time.monotonic() + START_TIMEOUT_S
    last_error = ""
    while time.monotonic() < deadline:
        for proc in procs:
            if proc.poll() is not None:
                raise KubeAPIUnavailable(f"{proc.args!r} exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/healthz", context=context, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError as exc:
            last_error = str(exc)
        time.sleep(0.2)
    raise KubeAPIUnavailable(f"apiserver not healthy after {START_TIMEOUT_S}s: {last_error}")


Popen = subprocess.Popen[bytes]


def _stop(proc: Popen) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=15)


@contextmanager
def run_local_apiserver(workdir: Path | None = None) -> Iterator[KubeAPI]:
    """Start etcd + apiserver on free loopback ports; stop both (and their children) on exit."""
    bin_dir = build_binaries()
    with tempfile.TemporaryDirectory(prefix="gridweave-kubeapi-", dir=workdir) as tmp:
        root = Path(tmp)
        pki = make_test_pki()
        files = {
            "ca.crt": pki.ca.cert,
            "server.crt": pki.server.cert,
            "server.key": pki.server.key,
            "admin.crt": pki.admin.cert,
            "admin.key": pki.admin.key,
        }
        for name, data in files.items():
            (root / name).write_bytes(data)
            (root / name).chmod(0o600)
        # The delegated authn/authz lookups point at an address where nothing listens:
        # client certificates from our CA and system:masters need no lookup.
        dead = root / "dead.kubeconfig"
        dead.write_text(yaml.safe_dump(_kubeconfig("https://127.0.0.1:1", pki.ca.cert, None, None)))

        etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
        log_etcd = (root / "etcd.log").open("wb")
        log_api = (root / "apiserver.log").open("wb")
        procs: list[Popen] = []
        try:
            procs.append(
                subprocess.Popen(
                    [
                        str(bin_dir / "etcd"),
                        "--name=test",
                        f"--data-dir={root / 'etcd'}",
                        f"--listen-client-urls=http://127.0.0.1:{etcd_port}",
                        f"--advertise-client-urls=http://127.0.0.1:{etcd_port}",
                        f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
                        f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
                        f"--initial-cluster=test=http://127.0.0.1:{peer_port}",
                        "--unsafe-no-fsync",
                        "--log-level=warn",
                    ],
                    stdout=log_etcd,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
            procs.append(
                subprocess.Popen(
                    [
                        str(bin_dir / "kube-apiserver"),
                        f"--etcd-servers=http://127.0.0.1:{etcd_port}",
                        "--bind-address=127.0.0.1",
                        f"--secure-port={api_port}",
                        f"--cert-dir={root / 'certs'}",
                        f"--tls-cert-file={root / 'server.crt'}",
                        f"--tls-private-key-file={root / 'server.key'}",
                        f"--client-ca-file={root / 'ca.crt'}",
                        "--authentication-skip-lookup",
                        f"--authentication-kubeconfig={dead}",
                        f"--authorization-kubeconfig={dead}",
                        f"--kubeconfig={dead}",
                        "--enable-priority-and-fairness=false",
                        "--disable-admission-plugins=NamespaceLifecycle,MutatingAdmissionWebhook,"
                        "ValidatingAdmissionWebhook,ValidatingAdmissionPolicy,"
                        "MutatingAdmissionPolicy",
                    ],
                    stdout=log_api,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
            url = f"https://127.0.0.1:{api_port}"
            try:
                _wait_healthz(url, root / "ca.crt", root / "admin.crt", root / "admin.key", procs)
            except KubeAPIUnavailable as exc:
                log = (root / "apiserver.log").read_text(errors="replace")[-3000:]
                raise KubeAPIUnavailable(f"{exc}\n--- apiserver log ---\n{log}") from exc
            kubeconfig = root / "kubeconfig"
            kubeconfig.write_text(
                yaml.safe_dump(_kubeconfig(url, pki.ca.cert, pki.admin.cert, pki.admin.key))
            )
            yield KubeAPI(kubeconfig=kubeconfig, started_here=True)
        finally:
            for proc in reversed(procs):
                _stop(proc)
            log_etcd.close()
            log_api.close()


@contextmanager
def api_client_for(kubeconfig: Path) -> Iterator[ApiClient]:
    """An official-client ApiClient for the cluster a kubeconfig names, closed on exit."""
    from kubernetes import config

    api_client: ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(kubeconfig)
    )
    try:
        yield api_client
    finally:
        api_client.close()  # type: ignore[no-untyped-call]


def install_crds(kubeconfig: Path, timeout_s: float = 60.0) -> None:
    """Create (or replace) the Gridweave CRDs and wait until each is Established."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    with api_client_for(kubeconfig) as api_client:
        ext = client.ApiextensionsV1Api(api_client)
        names = []
        for path in CRD_MANIFESTS:
            body = yaml.safe_load(path.read_text())
            names.append(body["metadata"]["name"])
            try:
                ext.create_custom_resource_definition(body)
            except ApiException as exc:
                if exc.status != 409:
                    raise
                current = ext.read_custom_resource_definition(body["metadata"]["name"])
                assert current.metadata is not None
                body["metadata"]["resourceVersion"] = current.metadata.resource_version
                ext.replace_custom_resource_definition(body["metadata"]["name"], body)
        deadline = time.monotonic() + timeout_s
        for name in names:
            while True:
                crd = ext.read_custom_resource_definition(name)
                conditions = (crd.status and crd.status.conditions) or []
                if any(c.type == "Established" and c.status == "True" for c in conditions):
                    break
                if time.monotonic() > deadline:
                    raise KubeAPIUnavailable(f"CRD {name} not Established after {timeout_s}s")
                time.sleep(0.1)


@contextmanager
def kube_api() -> Iterator[KubeAPI]:
    """A Kubernetes API with the Gridweave CRDs installed: external if configured, else local."""
    external = os.environ.get("GRIDWEAVE_TEST_KUBECONFIG")
    if external:
        api = KubeAPI(kubeconfig=Path(external), started_here=False)
        install_crds(api.kubeconfig)
        yield api
        return
    with run_local_apiserver() as api:
        install_crds(api.kubeconfig)
        yield api


@contextmanager
def namespace_on_cluster(kubeconfig: Path, name: str) -> Iterator[None]:
    """Create a Namespace on a full cluster for the duration of the block."""
    from kubernetes import client

    with api_client_for(kubeconfig) as api_client:
        core = client.CoreV1Api(api_client)
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
        try:
            yield
        finally:
            core.delete_namespace(name)
