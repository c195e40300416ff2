"""Run etcd and the full kube-apiserver the way envtest does, under one state directory.

Layout of ``state_dir``: ``pki/`` (see :mod:`gridweave_runtime.kubeapi.pki`), ``etcd/``
(the data), ``logs/`` (one file per process, appended to) and ``admin.kubeconfig``. A
directory can be started again and again: data, certificates and the service-account key
are kept, so kubeconfigs written for it stay valid as long as the port stays the same.

The apiserver runs with RBAC authorization, client-certificate authentication (the admin
is in ``system:masters``), service-account tokens signed by a key of this directory and
the default admission plugins (NamespaceLifecycle included). There is no controller
manager: a deleted namespace stays Terminating, and no ``default`` ServiceAccount appears.
etcd listens on loopback only, without TLS.
"""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from gridweave_runtime.kubeapi.errors import KubeAPIError
from gridweave_runtime.kubeapi.kubeconfig import kubeconfig_for_certificate, write_kubeconfig
from gridweave_runtime.kubeapi.pki import DEFAULT_HOSTS, Pki, ensure_pki
from gridweave_runtime.kubeapi.resources import api_client_for, ensure_namespace, install_crds

__all__ = ["BIN_ENV", "SERVICE_ACCOUNT_ISSUER", "KubeAPIServer", "find_binaries", "free_port"]

#: Names a directory holding ``etcd``, ``kube-apiserver`` and ``kubectl`` (skips the build).
BIN_ENV = "GRIDWEAVE_KUBEAPI_BIN"
#: The ``iss`` of service-account tokens (and their default audience).
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
_BUILD_SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "kubeapi" / "build.sh"
_STOP_TIMEOUT_S = 15.0
_POLL_S = 0.05

Popen = subprocess.Popen[bytes]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def find_binaries(build_script: Path = _BUILD_SCRIPT, *, show_progress: bool = False) -> Path:
    """The directory with etcd, kube-apiserver and kubectl: ``$GRIDWEAVE_KUBEAPI_BIN`` or built.

    Building runs ``tools/kubeapi/build.sh`` of a source checkout (cached: a warm run only
    prints the directory). ``show_progress`` lets the build's own output (Go's, on stderr)
    through to this process's stderr, for a first build run from a terminal.
    """
    if override := os.environ.get(BIN_ENV):
        return Path(override)
    if not build_script.exists():
        raise KubeAPIError(f"no {build_script}: set {BIN_ENV} to a directory with the binaries")
    result = subprocess.run(
        [str(build_script)],
        stdout=subprocess.PIPE,
        stderr=None if show_progress else subprocess.PIPE,
        text=True,
        check=False,
        timeout=3600,
    )
    if result.returncode == 127:
        raise KubeAPIError("Go is not installed: cannot build the Kubernetes API server")
    if result.returncode != 0:
        raise KubeAPIError(f"{build_script} failed:\n{(result.stderr or '')[-4000:]}")
    return Path(result.stdout.strip().splitlines()[-1])


def _stop(proc: Popen) -> None:
    """SIGTERM the process group, SIGKILL it if it lingers; reap the process."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=_STOP_TIMEOUT_S)
    except ProcessLookupError:
        proc.wait(timeout=_STOP_TIMEOUT_S)


class KubeAPIServer:
    """etcd + kube-apiserver under ``state_dir``; :meth:`start` waits until they serve.

    Args:
        state_dir: where data, certificates, logs and ``admin.kubeconfig`` live.
        binaries: the directory with ``etcd`` and ``kube-apiserver`` (:func:`find_binaries`).
        host: the loopback (or other local) address the apiserver binds to.
        port: the apiserver's port; ``None`` picks a free one at each start.
        durable: ``False`` runs etcd without fsync (throwaway test servers only).
        extra_hosts: more names or addresses for the serving certificate.
        namespaces: created (if missing) once the API is ready; the first is the admin
            kubeconfig's default (so ``kubectl get gwj`` needs no ``-n gridweave``).
        crd_manifests: CRD manifests installed once the API is ready, then waited for
            until Established and published in the OpenAPI document.
        apiserver_args: more kube-apiserver flags, after the launcher's own (a later flag
            wins), e.g. ``--watch-cache=false``.
    """

    def __init__(
        self,
        state_dir: Path,
        *,
        binaries: Path,
        host: str = "127.0.0.1",
        port: int | None = None,
        durable: bool = True,
        extra_hosts: Sequence[str] = (),
        namespaces: Sequence[str] = ("gridweave",),
        crd_manifests: Sequence[Path] = (),
        apiserver_args: Sequence[str] = (),
    ) -> None:
        self.state_dir = state_dir
        self.binaries = binaries
        self.host = host
        self.port = port
        self.durable = durable
        self.extra_hosts = tuple(extra_hosts)
        self.namespaces = tuple(namespaces)
        self.crd_manifests = tuple(crd_manifests)
        self.apiserver_args = tuple(apiserver_args)
        self._procs: list[Popen] = []
        self._url: str | None = None
        self._etcd_url: str | None = None

    @property
    def url(self) -> str:
        """The apiserver's base URL (only while started)."""
        if self._url is None:
            raise KubeAPIError("the Kubernetes API server is not running")
        return self._url

    @property
    def etcd_url(self) -> str:
        """etcd's client URL on loopback (only while started)."""
        if self._etcd_url is None:
            raise KubeAPIError("etcd is not running")
        return self._etcd_url

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig (client certificate in ``system:masters``)."""
        return self.state_dir / "admin.kubeconfig"

    @property
    def pki(self) -> Pki:
        """Where this directory's certificates and keys are."""
        return Pki(self.state_dir / "pki")

    @property
    def pids(self) -> list[int]:
        """The process ids of etcd and the apiserver while they run."""
        return [proc.pid for proc in self._procs if proc.poll() is None]

    def start(self, *, timeout_s: float = 90.0) -> None:
        """Start etcd and the apiserver, wait for ``/readyz``, write ``admin.kubeconfig``.

        Then create the namespaces and install the CRDs. On any failure both processes
        are stopped before the error (:class:`KubeAPIError`) is raised.
        """
        if self._procs:
            raise KubeAPIError("already started")
        hosts = (*DEFAULT_HOSTS, self.host, *self.extra_hosts)
        pki = ensure_pki(self.pki.directory, hosts=tuple(dict.fromkeys(hosts)))
        (self.state_dir / "logs").mkdir(parents=True, exist_ok=True)
        port = self.port or free_port(self.host)
        url = f"https://{self.host}:{port}"
        try:
            self._etcd_url = etcd_url = self._start_etcd()
            args = [*self._apiserver_args(pki, port, etcd_url), *self.apiserver_args]
            self._spawn("kube-apiserver", args)
            deadline = time.monotonic() + timeout_s
            self._wait_ready(url, pki, deadline)
            config = kubeconfig_for_certificate(
                url,
                pki.ca_cert.read_bytes(),
                pki.admin_cert.read_bytes(),
                pki.admin_key.read_bytes(),
                namespace=self.namespaces[0] if self.namespaces else None,
            )
            write_kubeconfig(self.kubeconfig, config)
            self._url = url
            self._set_up(max(deadline - time.monotonic(), 1.0))
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop the apiserver, then etcd (and anything they started); idempotent."""
        for proc in reversed(self._procs):
            _stop(proc)
        self._procs.clear()
        self._url = self._etcd_url = None

    def __enter__(self) -> KubeAPIServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _set_up(self, timeout_s: float) -> None:
        with api_client_for(self.kubeconfig) as api_client:
            try:
                for namespace in self.namespaces:
                    ensure_namespace(api_client, namespace)
                install_crds(api_client, self.crd_manifests, timeout_s=timeout_s)
            except ApiException as exc:
                raise KubeAPIError(f"setting up the API failed: {exc.status} {exc.body}") from exc
            except HTTPError as exc:
                raise KubeAPIError(f"setting up the API failed: {exc!r}") from exc

    def _spawn(self, name: str, args: list[str]) -> Popen:
        with (self.state_dir / "logs" / f"{name}.log").open("ab") as log:
            proc = subprocess.Popen(
                [str(self.binaries / name), *args],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stopped as one
            )
        self._procs.append(proc)
        return proc

    def _start_etcd(self) -> str:
        client_port, peer_port = free_port(), free_port()
        client = f"http://127.0.0.1:{client_port}"
        peer = f"http://127.0.0.1:{peer_port}"
        args = [
            "--name=gridweave",
            f"--data-dir={self.state_dir / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=gridweave={peer}",
            "--log-level=warn",
        ]
        if not self.durable:
            args.append("--unsafe-no-fsync")
        self._spawn("etcd", args)
        return client

    def _apiserver_args(self, pki: Pki, port: int, etcd_url: str) -> list[str]:
        return [
            f"--etcd-servers={etcd_url}",
            f"--bind-address={self.host}",
            f"--advertise-address={self.host}",
            f"--secure-port={port}",
            f"--cert-dir={pki.directory}",
            f"--tls-cert-file={pki.server_cert}",
            f"--tls-private-key-file={pki.server_key}",
            f"--client-ca-file={pki.ca_cert}",
            "--authorization-mode=RBAC",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
            f"--service-account-key-file={pki.service_account_pub}",
            f"--service-account-signing-key-file={pki.service_account_key}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            # No nodes and no kube-proxy: the `kubernetes` Service needs no endpoints (and a
            # loopback address could not be one).
            "--endpoint-reconciler-type=none",
            "--profiling=false",
        ]

    def _wait_ready(self, url: str, pki: Pki, deadline: float) -> None:
        context = ssl.create_default_context(cafile=str(pki.ca_cert))
        context.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))
        last = "no answer"
        while time.monotonic() < deadline:
            for proc in self._procs:
                if proc.poll() is not None:
                    name = Path(str(proc.args[0])).name  # type: ignore[index]
                    raise KubeAPIError(
                        f"{name} exited with {proc.returncode}\n{self._log_tail(name)}"
                    )
            try:
                with urllib.request.urlopen(f"{url}/readyz", context=context, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except urllib.error.HTTPError as exc:
                last = exc.read().decode(errors="replace")[-2000:]
            except OSError as exc:
                last = str(exc)
            time.sleep(_POLL_S)
        raise KubeAPIError(
            f"kube-apiserver not ready at {url}/readyz: {last}\n{self._log_tail('kube-apiserver')}"
        )

    def _log_tail(self, name: str) -> str:
        path = self.state_dir / "logs" / f"{name}.log"
        try:
            text = path.read_text(errors="replace")[-3000:]
        except OSError:
            return ""
        return f"--- {path} ---\n{text}"
