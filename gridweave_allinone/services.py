"""Which processes the all-in-one runs, in which order, and the environment of each.

Every service runs the way an operator runs it (``python -m <package>``), on its standard
port (plus ``GRIDWEAVE_PORT_OFFSET``), with its database on the one embedded PostgreSQL
(logging in as that database's own role), a service token of its own (the deployment's
credentials document beside it) and the one state directory (so the platform and the
gateway share the local object store under ``<state_dir>/objects``). The waves start in
order; a wave's services start together and the next wave waits until each answers
``/healthz``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gridweave_allinone.settings import AllInOneSettings

__all__ = [
    "DASHBOARD_SERVICES",
    "SCRAPED_SERVICES",
    "SERVE_KEY_HOLDERS",
    "ServiceSpec",
    "Wiring",
    "service_databases",
    "service_waves",
]

#: The services whose /healthz and /metrics the dashboard's diagnostics page shows (beside
#: the platform's), each with the port that answers them: the registry's supervisor answers
#: on a port of its own, not the registry's API.
DASHBOARD_SERVICES = {
    "gateway": "gateway",
    "metering": "metering",
    "credit": "credit",
    "faucet": "faucet",
    "chain": "chain",
    "kuberay": "kuberay",
    "registry": "registry_health",
}
#: The services whose public /metrics Prometheus reads: every one that serves HTTP but the
#: dashboard (no series of its own).
SCRAPED_SERVICES = {"platform": "platform", **DASHBOARD_SERVICES}
#: The services that call endpoints' replicas on Ray Serve: the platform's proxy, the
#: gateway's probe.
SERVE_KEY_HOLDERS = frozenset({"platform", "gateway"})


@dataclass(frozen=True)
class ServiceSpec:
    """One service process: its name, package, settings prefix, port and environment."""

    name: str
    package: str
    prefix: str
    port: int
    database: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    args: tuple[str, ...] = ()
    health_path: str | None = "/healthz"  # None: a worker that serves nothing (ready once started)
    health_port: int | None = None  # another port than the service's own
    #: The credential it runs with (``gridweave_runtime.credentials``); None: its name's, if
    #: there is one (the dashboard and Prometheus call no service: they get none).
    credential: str | None = None

    def health_url(self, host: str) -> str | None:
        """Where the service answers 200 once it serves (None: nothing to ask)."""
        if self.health_path is None:
            return None
        return f"http://{host}:{self.health_port or self.port}{self.health_path}"

    def environment(self, wiring: Wiring, host: str) -> dict[str, str]:
        """The variables this service is started with (on top of the caller's)."""
        values = {
            **wiring.common,
            f"{self.prefix}HOST": host,
            f"{self.prefix}PORT": str(self.port),
            **self.env,
        }
        if self.database is not None:
            values[f"{self.prefix}DATABASE_URL"] = wiring.database_urls[self.database]
        token = wiring.tokens.get(self.credential or self.name)
        if token is not None:
            values["GRIDWEAVE_SERVICE_TOKEN"] = token
        if self.name in SERVE_KEY_HOLDERS:
            values["GRIDWEAVE_SERVE_KEY"] = wiring.serve_key
        return values


@dataclass(frozen=True)
class Wiring:
    """What ties the services together: each database's URL (as its own role, never the
    superuser's), each credential's token, the Serve key's secret and the shared variables."""

    database_urls: Mapping[str, str]
    common: Mapping[str, str]
    tokens: Mapping[str, str] = field(default_factory=dict)
    serve_key: str = ""


def service_databases(waves: list[list[ServiceSpec]]) -> list[str]:
    """The databases the services of ``waves`` use, each once, in start order."""
    names = (spec.database for wave in waves for spec in wave if spec.database is not None)
    return list(dict.fromkeys(names))


def _prometheus(settings: AllInOneSettings, binary: Path) -> ServiceSpec:
    """Prometheus (``python -m gridweave_allinone.prometheus``), reading every service's
    /metrics, its configuration and data under ``<state_dir>/prometheus``."""
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    targets = {
        name: f"{settings.client_host}:{settings.port(port)}"
        for name, port in SCRAPED_SERVICES.items()
    }
    return ServiceSpec(
        "prometheus",
        "gridweave_allinone.prometheus",
        "PROMETHEUS_",
        settings.port("prometheus"),
        args=(
            f"--binary={binary}",
            f"--directory={settings.state_dir / 'prometheus'}",
            f"--listen={host}:{settings.port('prometheus')}",
            f"--targets={json.dumps(targets, sort_keys=True)}",
        ),
        health_path="/-/ready",
    )


def service_waves(
    settings: AllInOneSettings,
    *,
    service_kubeconfig: Path,
    gateway_kubeconfig: Path,
    proxy_secret: str | None = None,
    prometheus: Path | None = None,
) -> list[list[ServiceSpec]]:
    """The services in start order: each wave needs only those of the waves before it.

    ``proxy_secret`` goes to the dashboard (``WEB_PROXY_SECRET``) and the platform
    (``PLATFORM_DASHBOARD_PROXY_SECRET``) only: with it the platform believes the browser's
    address the dashboard forwards. ``prometheus`` (its binary) starts Prometheus first, so
    it sees the services come up, and gives the platform its URL (the console's charts).
    """
    url = settings.url
    proxied = {} if proxy_secret is None else {"PLATFORM_DASHBOARD_PROXY_SECRET": proxy_secret}
    charted = {} if prometheus is None else {"PLATFORM_PROMETHEUS_URL": url("prometheus")}
    shared_urls = {
        "CREDIT_SERVICE_URL": url("credit"),
        "METERING_SERVICE_URL": url("metering"),
        "CHAIN_SERVICE_URL": url("chain"),
        "FAUCET_SERVICE_URL": url("faucet"),
        "GATEWAY_URL": url("gateway"),
        "KUBERAY_URL": url("kuberay"),
    }
    chain_env = {"CHAIN_ENABLED": "true" if settings.chain_enabled else "false"}
    gateway_env = {
        **shared_urls,
        # its own ServiceAccount, straight to the Kubernetes API: no hop through kuberay
        "GATEWAY_CRD_TRANSPORT": "direct",
        "GATEWAY_KUBECONFIG": str(gateway_kubeconfig),
        # a job's own image: its owner's pull token from the platform, pulled from here
        "GATEWAY_PLATFORM_URL": url("platform"),
        "GATEWAY_REGISTRY_ADDRESS": url("registry").removeprefix("http://"),
        "GATEWAY_RAY_PORT": str(settings.port("ray")),
        "GATEWAY_SERVE_PORT": str(settings.port("serve")),
    }
    kuberay_env = {"KUBERAY_KUBECONFIG": str(service_kubeconfig)}

    def spec(name: str, prefix: str, database: str | None, env: Mapping[str, str]) -> ServiceSpec:
        package = "job_gateway" if name == "gateway" else f"{name}_service"
        return ServiceSpec(name, package, prefix, settings.port(name), database, env)

    first = [
        spec("credit", "CREDITS_", "credits", {}),
        spec("kuberay", "KUBERAY_", "kuberay", kuberay_env),
    ]
    if prometheus is not None:
        first.append(_prometheus(settings, prometheus))
    if settings.chain_enabled:
        rpc = settings.port("cometbft")
        chain_env["CHAIN_COMETBFT_RPC_URL"] = f"http://{settings.client_host}:{rpc}"
        node_args = (f"--rpc-port={rpc}", f"--p2p-port={rpc - 1}", f"--abci-port={rpc + 1}")
        # the node makes chain_service's signing key on first use: it starts first
        first.append(
            ServiceSpec(
                "cometbft",
                "chain_service.node",
                "CHAIN_",
                rpc,
                None,
                chain_env,
                node_args,
                "/health",
            )
        )
    return [
        first,
        [
            spec("chain", "CHAIN_", "chain", chain_env),
            spec("metering", "METERING_", "metering", shared_urls),
            spec("faucet", "FAUCET_", "faucet", shared_urls),
            spec("gateway", "GATEWAY_", None, gateway_env),
        ],
        [
            # metering's receipt outbox to chain_service, beside (never inside) metering's
            # API; on metering's settings and database, once metering has migrated it
            ServiceSpec(
                "metering-deliverer",
                "metering_service.deliverer",
                "METERING_",
                settings.port("metering"),  # binds nothing
                "metering",
                shared_urls,
                health_path=None,
                credential="metering",
            ),
            spec(
                "platform",
                "PLATFORM_",
                "platform",
                {
                    **shared_urls,
                    **proxied,
                    **charted,
                    # where a job's image is checked and pinned to its digest
                    "PLATFORM_REGISTRY_URL": url("registry"),
                },
            ),
        ],
        # the registry asks the platform for its token key at start; crane refuses a token
        # realm on a loopback IP address, hence localhost; the dashboard proxies /v1 to the
        # platform and shows every service's health and metrics to admins
        [
            ServiceSpec(
                "web",
                "gridweave_allinone.dashboard",
                "WEB_",
                settings.port("web"),
                env={
                    "WEB_PLATFORM_URL": url("platform"),
                    **({} if proxy_secret is None else {"WEB_PROXY_SECRET": proxy_secret}),
                    "WEB_SERVICE_URLS": json.dumps(
                        {name: url(port) for name, port in DASHBOARD_SERVICES.items()},
                        sort_keys=True,
                    ),
                },
            ),
            ServiceSpec(
                "registry",
                "registry_service",
                "REGISTRY_",
                settings.port("registry"),
                env={
                    "REGISTRY_HEALTH_PORT": str(settings.port("registry_health")),
                    "REGISTRY_PLATFORM_URL": f"http://localhost:{settings.port('platform')}",
                },
                health_port=settings.port("registry_health"),
            ),
        ],
    ]
