"""kuberay-service settings, read from the environment.

``KUBERAY_HOST``, ``KUBERAY_PORT`` (8800), ``KUBERAY_NAMESPACE`` (``gridweave``),
``KUBERAY_KUBECONFIG`` (unset: in-cluster config, else ``KUBECONFIG`` / ``~/.kube/config``),
plus its ``GRIDWEAVE_SERVICE_TOKEN`` and the ``GRIDWEAVE_CREDENTIALS`` every call is checked
against (``/v1/crd``: the gateway's, or an admin's).

The node registry (``/v1/nodes``, on unless ``KUBERAY_NODES_ENABLED=false``) keeps its state
in PostgreSQL (``KUBERAY_DATABASE_URL``; unset: the embedded server, database ``kuberay``)
and hands joining nodes the mesh and cluster settings below (``KUBERAY_MESH_CIDR``,
``KUBERAY_WIREGUARD_*``, ``KUBERAY_K3S_*``, ``KUBERAY_REGISTRY_ADDRESS``).
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from gridweave_runtime.settings import ServiceSettings
from kuberay_service.mesh.keys import decode_key

__all__ = ["DATABASE_NAME", "KubeRaySettings"]

#: The node registry's database on the embedded server (or ``KUBERAY_DATABASE_URL``).
DATABASE_NAME = "kuberay"


class KubeRaySettings(ServiceSettings):
    """Settings of kuberay-service (prefix ``KUBERAY_``)."""

    model_config = SettingsConfigDict(env_prefix="KUBERAY_")

    port: int = Field(default=8800, ge=1, le=65535, description="TCP port of the HTTP server.")
    namespace: str = Field(
        default="gridweave",
        description="KUBERAY_NAMESPACE: the namespace holding the Gridweave resources.",
    )
    kubeconfig: Path | None = Field(
        default=None,
        description=(
            "KUBERAY_KUBECONFIG: kubeconfig of the cluster. Unset: in-cluster config, "
            "else KUBECONFIG or ~/.kube/config."
        ),
    )
    # -- the node registry (/v1/nodes) ---------------------------------------------------
    nodes_enabled: bool = Field(
        default=True,
        description=(
            "Serve the node registry (/v1/nodes: join keys, validate, register, heartbeats); "
            "its state is in PostgreSQL. false: only /v1/crd, no database."
        ),
    )
    mesh_cidr: IPv4Network = Field(
        default=IPv4Network("10.88.0.0/16"),
        description="The WireGuard mesh's addresses; each joined node gets one of them.",
    )
    master_vpn_ip: IPv4Address | None = Field(
        default=None,
        description="The master's address in the mesh. Unset: the first host of the mesh.",
    )
    wireguard_endpoint: str | None = Field(
        default=None,
        max_length=300,
        description="host:port where nodes reach the master's WireGuard (validate needs it).",
    )
    wireguard_public_key: str | None = Field(
        default=None, description="The master's WireGuard public key (base64, 44 characters)."
    )
    wireguard_interface: str | None = Field(
        default=None,
        max_length=15,
        description=(
            "The master's WireGuard interface (wg0) whose peers kuberay-service keeps equal "
            "to the registry's nodes through wg and wg-quick (needs CAP_NET_ADMIN on the "
            "host's network). Unset: the service changes no peer."
        ),
    )
    mesh_sync_period_seconds: float = Field(
        default=60.0,
        gt=0,
        le=3_600,
        description="The peers are reconciled this often besides after each join and leave.",
    )
    ray_cluster: str | None = Field(
        default=None,
        max_length=63,
        description=(
            "The RayCluster (in KUBERAY_NAMESPACE) whose worker groups follow the joined "
            "nodes: one gw-<node> group each. Unset: no RayCluster is changed."
        ),
    )
    ray_worker_image: str = Field(
        default="gridweave/ray-worker:latest",
        max_length=300,
        description="The image of the nodes' Ray worker pods.",
    )
    k3s_url: str | None = Field(
        default=None,
        description="The K3s server URL a node's agent joins, e.g. https://10.88.0.1:6443.",
    )
    k3s_token: SecretStr | None = Field(
        default=None, description="The K3s join token handed to a validated node."
    )
    registry_address: str | None = Field(
        default=None, description="host:port of the image registry nodes pull from."
    )
    heartbeat_interval_seconds: float = Field(
        default=10.0, gt=0, le=3_600, description="How often a node's agent sends a heartbeat."
    )
    heartbeat_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        le=86_400,
        description="A node whose last heartbeat is older than this is NotReady.",
    )
    validate_rate_limit: int = Field(
        default=30, ge=1, description="Validations allowed per client address per window."
    )
    validate_rate_window_seconds: float = Field(
        default=60.0, gt=0, le=86_400, description="The window of the validation rate limit."
    )

    @field_validator("wireguard_public_key")
    @classmethod
    def _a_wireguard_key(cls, value: str | None) -> str | None:
        if value is not None:
            decode_key(value)  # ValueError names what is wrong
        return value

    @field_validator("wireguard_endpoint")
    @classmethod
    def _host_and_port(cls, value: str | None) -> str | None:
        if value is not None:
            host, colon, port = value.rpartition(":")
            if not (host and colon and port.isdigit() and 1 <= int(port) <= 65535):
                raise ValueError(f"{value!r} is not host:port")
        return value

    @model_validator(mode="after")
    def _master_in_mesh(self) -> KubeRaySettings:
        if self.mesh_cidr.num_addresses < 4:
            raise ValueError(f"KUBERAY_MESH_CIDR {self.mesh_cidr} is too small: /30 at most")
        if self.master_vpn_ip is not None and self.master_vpn_ip not in self.mesh_cidr:
            raise ValueError(
                f"KUBERAY_MASTER_VPN_IP {self.master_vpn_ip} is outside {self.mesh_cidr}"
            )
        return self

    @property
    def master_address(self) -> IPv4Address:
        """The master's mesh address (set, or the mesh's first host)."""
        return self.master_vpn_ip or next(self.mesh_cidr.hosts())
