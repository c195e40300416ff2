"""The whole platform on one machine: start it, keep it running, stop every part of it.

Order on start: the state directory (locked: one all-in-one per directory), the internal
token, the embedded PostgreSQL, the Kubernetes API, each service database with its own role
(the only use of PostgreSQL's superuser), Prometheus's binary (built on a first run; without
it everything but the admin console's charts runs), then the services wave by wave
(:mod:`gridweave_allinone.services`; Prometheus among the first), and on the first start
only, an admin API key. Stop runs the other way: services (Prometheus last), the local Ray
head the gateway started, the Kubernetes API, PostgreSQL. Every step reports a line through
``report``.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from gridweave_allinone.job_image import publish_default_image
from gridweave_allinone.kube import KubeAccess, start_kube
from gridweave_allinone.mail import OutboxWatcher
from gridweave_allinone.ports import PortsInUse, check_ports
from gridweave_allinone.prometheus import PrometheusUnavailable, find_prometheus
from gridweave_allinone.secrets import (
    dashboard_proxy_secret,
    secrets_dir,
    serve_key_secret,
    service_tokens,
)
from gridweave_allinone.services import Wiring, service_databases, service_waves
from gridweave_allinone.settings import AllInOneSettings
from gridweave_allinone.supervisor import ServiceProcess, StartFailed, Supervisor
from gridweave_clients.credit import CreditClient
from gridweave_clients.platform import PlatformClient
from gridweave_runtime.kubeapi import KubeAPIError
from gridweave_runtime.local_ray import ray_temp_dir, stop_local_head
from gridweave_runtime.postgres import (
    EmbeddedPostgresError,
    embedded_database_url,
    embedded_server_url,
    stop_embedded_server,
)
from gridweave_runtime.service_roster import credentials_document

__all__ = ["ADMIN_EMAIL", "START_ERRORS", "AllInOne", "AlreadyRunning", "Started"]

ADMIN_EMAIL = "admin@gridweave.local"
_ADMIN_ISSUED = "admin-key-issued"
_ADMIN_GRANT_KEY = "all-in-one-first-admin-grant"
Report = Callable[[str], None]


class AlreadyRunning(RuntimeError):
    """Another all-in-one holds this state directory."""


#: What a start that cannot go on raises: each says what failed, for one line to the user.
START_ERRORS = (AlreadyRunning, PortsInUse, StartFailed, KubeAPIError, EmbeddedPostgresError)


@dataclass(frozen=True)
class Started:
    """What a user needs once the platform runs."""

    state_dir: Path
    urls: dict[str, str]
    kubeconfig: Path
    admin_api_key: str | None  # a new key on the first start only
    log_dir: Path
    kubectl: Path | None = None  # the local API's own, else the PATH's


@dataclass
class AllInOne:
    """One all-in-one platform over ``settings.state_dir``."""

    settings: AllInOneSettings
    report: Report = print
    show_progress: bool = False
    _supervisor: Supervisor | None = None
    _kube: KubeAccess | None = None
    _postgres_started: bool = False
    _lock: IO[str] | None = None
    _mail: OutboxWatcher | None = None

    @property
    def state_dir(self) -> Path:
        return self.settings.state_dir.expanduser().resolve()

    def start(self) -> Started:
        """Start every part; on any failure, stop what was started and raise."""
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> Started:
        state = self.state_dir
        state.mkdir(parents=True, exist_ok=True)
        self._lock = _lock_state_dir(state)
        check_ports(self.settings)  # before anything starts: a taken port named, its holder
        tokens = service_tokens(state)
        token = tokens["operator"]  # the supervisor's own: the seed's grant, the mail relay
        self.report(f"state directory {state}")
        self.report("starting PostgreSQL (embedded)")
        embedded_server_url(state)
        self._postgres_started = True
        self.report(
            "starting the Kubernetes API (etcd + kube-apiserver)"
            if self.settings.kubeconfig is None
            else f"using the cluster of {self.settings.kubeconfig}"
        )
        self._kube = start_kube(self.settings, show_progress=self.show_progress)
        waves = service_waves(
            self.settings,
            service_kubeconfig=self._kube.service_kubeconfig,
            gateway_kubeconfig=self._kube.gateway_kubeconfig,
            proxy_secret=dashboard_proxy_secret(state),
            prometheus=self._prometheus_binary(),
        )
        databases = service_databases(waves)
        self.report(
            "PostgreSQL: a role of its own for each database (" + ", ".join(databases) + ")"
        )
        wiring = Wiring(
            database_urls={name: embedded_database_url(state, name) for name in databases},
            common={
                "GRIDWEAVE_CREDENTIALS": credentials_document(tokens),
                "GRIDWEAVE_STATE_DIR": str(state),
            },
            tokens=tokens,
            serve_key=serve_key_secret(state),
        )
        supervisor = self._supervisor = Supervisor(state / "logs")
        urls: dict[str, str] = {}

        def note_url(child: ServiceProcess) -> None:
            if child.health_url is not None:  # a worker (no health URL) serves nothing
                urls[child.name] = self.settings.url(child.name)

        for wave in waves:
            children = [
                supervisor.add(
                    spec.name,
                    spec.package,
                    spec.environment(wiring, self.settings.host),
                    health_url=spec.health_url(self.settings.client_host),
                    args=spec.args,
                )
                for spec in wave
            ]
            self.report("starting " + ", ".join(child.name for child in children))
            supervisor.start_wave(
                children,
                timeout_s=self.settings.start_timeout_seconds,
                on_ready=note_url,
            )
        platform = next(child for child in supervisor.children if child.name == "platform")
        admin_key = self._first_admin_key(platform.env, token)
        registry = self.settings.url("registry").removeprefix("http://")
        publish_default_image(registry, platform.env, self.report)
        self._mail = OutboxWatcher(self.settings.url("faucet"), token)
        return Started(
            state_dir=state,
            urls=urls,
            kubeconfig=self._kube.admin_kubeconfig,
            admin_api_key=admin_key,
            log_dir=supervisor.log_dir,
            kubectl=self._kube.kubectl,
        )

    def _prometheus_binary(self) -> Path | None:
        """Prometheus's binary (built on a first run); None, said in a line, when there is
        none: everything runs, only the admin console draws no charts."""
        try:
            return find_prometheus(show_progress=self.show_progress)
        except PrometheusUnavailable as exc:
            self.report(f"no Prometheus, so the admin console draws no charts: {exc}")
            return None

    def _first_admin_key(self, platform_env: dict[str, str], token: str) -> str | None:
        """A new admin API key, with its grant, on the first start of this state directory.

        Later starts answer ``None``: the key was shown once. The grant is minted under a
        fixed idempotency key, so a first start cut short and run again grants once.
        """
        marker = secrets_dir(self.state_dir) / _ADMIN_ISSUED
        if marker.exists():
            return None
        result = subprocess.run(
            [sys.executable, "-m", "platform_service", "create-admin", "--email", ADMIN_EMAIL],
            env=platform_env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if result.returncode != 0:
            raise StartFailed(f"creating the admin failed:\n{result.stderr[-3000:]}")
        api_key = result.stdout.strip().splitlines()[-1]
        grant = self.settings.admin_grant_micro_credits
        if grant > 0:
            with PlatformClient(self.settings.url("platform"), api_key) as platform:
                admin = platform.get_me()
            with CreditClient(self.settings.url("credit"), token, role="admin") as credit:
                credit.mint(admin.user_id, amount=grant, idempotency_key=_ADMIN_GRANT_KEY)
            self.report(f"granted the admin {grant / 1_000_000:g} credits")
        marker.write_text(time.strftime("%Y-%m-%dT%H:%M:%SZ\n", time.gmtime()))
        return api_key

    def watch_once(self) -> None:
        """Restart a service that died; show verification emails kept in the outbox."""
        if self._supervisor is not None:
            self._supervisor.watch(self.report)
        if self._mail is not None:
            for line in self._mail.new_messages():
                self.report(line)

    def stop(self) -> None:
        """Stop everything this all-in-one started (idempotent). Nothing when it never held
        the state directory: what runs there then is another all-in-one's."""
        if self._lock is None:
            return
        if self._supervisor is not None:
            self.report("stopping the services")
            self._supervisor.stop_all()
            self._supervisor = None
        temp_dir = ray_temp_dir(self.state_dir)
        if stop_local_head(temp_dir):
            self.report("stopped the local Ray")
        if self._kube is not None:
            self.report("stopping the Kubernetes API")
            self._kube.stop()
            self._kube = None
        if self._postgres_started:
            self.report("stopping PostgreSQL")
            stop_embedded_server(self.state_dir)
            self._postgres_started = False
        if self._mail is not None:
            self._mail.close()
            self._mail = None
        if self._lock is not None:
            self._lock.close()
            self._lock = None


def _lock_state_dir(state: Path) -> IO[str]:
    """Hold ``<state>/up.lock`` for this process's life; refuse when another holds it."""
    handle = (state / "up.lock").open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise AlreadyRunning(
            f"{state} is in use by a running all-in-one ({holder}): stop it first, or set "
            "GRIDWEAVE_STATE_DIR to another directory"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}\n")
    handle.flush()
    return handle
