"""The all-in-one's settings (``GRIDWEAVE_*``): where its data lives, its ports, its Kubernetes.

Each service started keeps reading its own variables (``PLATFORM_*``, ``GATEWAY_*``, ...)
from the environment; the all-in-one sets only what ties them together (ports, URLs, the
databases, each service's token, the state directory), so any other setting of a service can
still be given the usual way.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from gridweave_runtime.settings import default_state_dir

__all__ = ["DEFAULT_PORTS", "RAY_WORKER_PORTS", "AllInOneSettings"]

#: The standard ports (docs/architecture.md, "Ports"), before GRIDWEAVE_PORT_OFFSET.
DEFAULT_PORTS: dict[str, int] = {
    "platform": 8100,
    "gateway": 8200,
    "metering": 8300,
    "credit": 8400,
    "faucet": 8500,
    "chain": 8600,
    "prometheus": 8700,  # the metrics the admin console charts (gridweave_allinone.prometheus)
    "kuberay": 8800,
    "kubeapi": 6443,
    "ray": 6380,
    "serve": 8900,  # Ray Serve's HTTP proxy: the model endpoints (job_gateway.endpoints)
    "cometbft": 26657,  # its RPC; P2P and the ABCI application on the two ports below it
    "registry": 30500,
    "registry_health": 30501,
    "web": 3000,
}

#: Ray's worker ports (``ray start``'s default ``--min-worker-port`` to
#: ``--max-worker-port``): a Ray worker of any Ray on the machine may take one, so no port of
#: the all-in-one lies there.
RAY_WORKER_PORTS = range(10002, 20000)

#: Bind addresses that mean every address of the machine.
_EVERY_ADDRESS = frozenset({"0.0.0.0", "::", ""})


class AllInOneSettings(BaseSettings):
    """Settings of ``gridweave up`` (prefix ``GRIDWEAVE_``)."""

    model_config = SettingsConfigDict(env_prefix="GRIDWEAVE_", extra="ignore", frozen=True)

    state_dir: Path = Field(
        default_factory=default_state_dir,
        description=(
            "GRIDWEAVE_STATE_DIR: every byte of data (etcd, PostgreSQL, objects, Ray, logs, "
            "secrets); a second start on the same directory keeps every job, key and balance."
        ),
    )
    host: str = Field(
        default="127.0.0.1",
        description=(
            "GRIDWEAVE_HOST: the address every service binds to; 0.0.0.0 binds them to every "
            "address of the machine (joined nodes reach kuberay-service on its LAN address), "
            "while the services still reach each other, and the Kubernetes API stays, on "
            "loopback."
        ),
    )
    port_offset: int = Field(
        default=0,
        ge=1 - min(DEFAULT_PORTS.values()),
        le=65535 - max(DEFAULT_PORTS.values()),
        description=(
            "GRIDWEAVE_PORT_OFFSET: added to every standard port (3000 dashboard, 8100 "
            "platform ... 8700 Prometheus, 8800 kuberay-service, 6443 Kubernetes API, 6380 Ray, "
            "8900 Ray Serve, 30500 registry), to run beside another copy; none may land among "
            "Ray's worker ports (10002-19999): up to 1101, or from 17000. gridweave up checks "
            "every port before it starts and names the process holding one."
        ),
    )

    @field_validator("port_offset")
    @classmethod
    def _outside_ray_worker_ports(cls, offset: int) -> int:
        inside = [
            f"{name} {port + offset}"
            for name, port in DEFAULT_PORTS.items()
            if port + offset in RAY_WORKER_PORTS
        ]
        if inside:
            below = (
                RAY_WORKER_PORTS.start
                - 1
                - max(p for p in DEFAULT_PORTS.values() if p < RAY_WORKER_PORTS.start)
            )
            above = RAY_WORKER_PORTS.stop - min(DEFAULT_PORTS.values())
            raise ValueError(
                f"puts {', '.join(inside)} among Ray's worker ports "
                f"({RAY_WORKER_PORTS.start}-{RAY_WORKER_PORTS.stop - 1}), where any Ray "
                f"worker on this machine may take them: use an offset up to {below}, or from "
                f"{above}"
            )
        return offset

    kubeconfig: Path | None = Field(
        default=None,
        description=(
            "GRIDWEAVE_KUBECONFIG: an existing cluster (k3s, kind) to use instead of starting "
            "the local Kubernetes API; its admin kubeconfig."
        ),
    )
    chain_enabled: bool = Field(
        default=False,
        validation_alias=AliasChoices("CHAIN_ENABLED"),
        description=(
            "CHAIN_ENABLED: anchor the audit chain's batches in a local CometBFT node "
            "(built from its Go module on first use)."
        ),
    )
    admin_grant_micro_credits: int = Field(
        default=100_000_000,
        ge=0,
        le=10**15,
        description=(
            "GRIDWEAVE_ADMIN_GRANT_MICRO_CREDITS: credits minted for the first admin on the "
            "first start (100 credits by default), so its key runs jobs at once."
        ),
    )
    start_timeout_seconds: float = Field(
        default=180.0,
        gt=0,
        le=3600,
        description="GRIDWEAVE_START_TIMEOUT_SECONDS: how long one service may take to answer.",
    )

    def port(self, name: str) -> int:
        """The port of ``name`` (a key of :data:`DEFAULT_PORTS`) after the offset."""
        return DEFAULT_PORTS[name] + self.port_offset

    @property
    def client_host(self) -> str:
        """Where the services reach each other: ``host``, or loopback when ``host`` binds
        every address."""
        return "127.0.0.1" if self.host in _EVERY_ADDRESS else self.host

    def url(self, name: str) -> str:
        """``http://<client host>:<port>`` of the service ``name``."""
        return f"http://{self.client_host}:{self.port(name)}"
