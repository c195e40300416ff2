"""wg-quick configurations: rendered for the master and for a worker, and parsed back.

The parser reads what ``wg-quick`` reads (sections ``[Interface]`` and ``[Peer]``,
``Key = Value`` lines, ``#`` comments) and refuses what it would refuse, so a test can check
a rendered file the way the tool will see it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Interface, IPv4Network

from kuberay_service.mesh.keys import decode_key

__all__ = [
    "DEFAULT_LISTEN_PORT",
    "KEEPALIVE_SECONDS",
    "InterfaceSection",
    "PeerSection",
    "WireGuardConfig",
    "master_config",
    "parse_config",
    "render_config",
    "worker_config",
]

DEFAULT_LISTEN_PORT = 51820
#: A node sends a keepalive this often, so a NAT in front of it keeps the mapping open.
KEEPALIVE_SECONDS = 25

_INTERFACE_KEYS = {"PrivateKey", "Address", "ListenPort", "MTU", "DNS", "Table", "SaveConfig"}
_PEER_KEYS = {"PublicKey", "AllowedIPs", "Endpoint", "PersistentKeepalive", "PresharedKey"}


@dataclass(frozen=True)
class InterfaceSection:
    """``[Interface]``: this machine's key and mesh address."""

    private_key: str
    address: IPv4Interface
    listen_port: int | None = None


@dataclass(frozen=True)
class PeerSection:
    """``[Peer]``: the other end, what it may send from, where to reach it."""

    public_key: str
    allowed_ips: tuple[IPv4Network, ...]
    endpoint: str | None = None
    persistent_keepalive: int | None = None
    comment: str | None = None  # the node's name, written as a comment above the section


@dataclass(frozen=True)
class WireGuardConfig:
    """One wg-quick configuration file."""

    interface: InterfaceSection
    peers: tuple[PeerSection, ...] = field(default=())


def master_config(
    *,
    private_key: str,
    address: IPv4Address,
    mesh: IPv4Network,
    listen_port: int = DEFAULT_LISTEN_PORT,
    nodes: tuple[tuple[str, str, IPv4Address], ...] = (),
) -> WireGuardConfig:
    """The hub: one peer per node (``(name, public key, mesh address)``), allowed its /32."""
    return WireGuardConfig(
        interface=InterfaceSection(
            private_key, IPv4Interface(f"{address}/{mesh.prefixlen}"), listen_port
        ),
        peers=tuple(
            PeerSection(public_key, (IPv4Network(f"{ip}/32"),), comment=name)
            for name, public_key, ip in sorted(nodes, key=lambda node: node[2])
        ),
    )


def worker_config(
    *,
    private_key: str,
    address: IPv4Address,
    mesh: IPv4Network,
    master_public_key: str,
    master_endpoint: str,
) -> WireGuardConfig:
    """A node: its address, and the master as its only peer, routing the whole mesh."""
    return WireGuardConfig(
        interface=InterfaceSection(private_key, IPv4Interface(f"{address}/32")),
        peers=(
            PeerSection(
                master_public_key,
                (mesh,),
                endpoint=master_endpoint,
                persistent_keepalive=KEEPALIVE_SECONDS,
                comment="gridweave master",
            ),
        ),
    )


def render_config(config: WireGuardConfig) -> str:
    """The file wg-quick reads (mode 0600: it holds the private key)."""
    interface = config.interface
    lines = [
        "[Interface]",
        f"PrivateKey = {interface.private_key}",
        f"Address = {interface.address}",
    ]
    if interface.listen_port is not None:
        lines.append(f"ListenPort = {interface.listen_port}")
    for peer in config.peers:
        lines.append("")
        if peer.comment:
            lines.append(f"# {peer.comment}")
        lines += ["[Peer]", f"PublicKey = {peer.public_key}"]
        lines.append("AllowedIPs = " + ", ".join(str(network) for network in peer.allowed_ips))
        if peer.endpoint is not None:
            lines.append(f"Endpoint = {peer.endpoint}")
        if peer.persistent_keepalive is not None:
            lines.append(f"PersistentKeepalive = {peer.persistent_keepalive}")
    return "\n".join(lines) + "\n"


def _sections(text: str) -> list[tuple[str, dict[str, str], str | None]]:
    sections: list[tuple[str, dict[str, str], str | None]] = []
    comment: str | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            comment = line[1:].strip() or None
            continue
        if line in ("[Interface]", "[Peer]"):
            sections.append((line[1:-1], {}, comment))
            comment = None
            continue
        name, equals, value = line.partition("=")
        if not equals or not sections:
            raise ValueError(f"line {number}: not a 'Key = Value' line in a section: {raw!r}")
        kind, values, _ = sections[-1]
        key = name.strip()
        allowed = _INTERFACE_KEYS if kind == "Interface" else _PEER_KEYS
        if key not in allowed:
            raise ValueError(f"line {number}: {key} is not a key of [{kind}]")
        if key in values:
            raise ValueError(f"line {number}: {key} repeats in [{kind}]")
        values[key] = value.strip()
    return sections


def _required(values: dict[str, str], key: str, kind: str) -> str:
    if key not in values:
        raise ValueError(f"[{kind}] has no {key}")
    return values[key]


def _port(value: str, what: str) -> int:
    port = int(value)
    if not 1 <= port <= 65535:
        raise ValueError(f"{what} {port} is not a port")
    return port


def parse_config(text: str) -> WireGuardConfig:
    """A wg-quick file read back; ValueError naming the line or key at fault."""
    sections = _sections(text)
    interfaces = [values for kind, values, _ in sections if kind == "Interface"]
    if len(interfaces) != 1:
        raise ValueError(f"{len(interfaces)} [Interface] sections, not 1")
    values = interfaces[0]
    decode_key(_required(values, "PrivateKey", "Interface"))
    interface = InterfaceSection(
        private_key=values["PrivateKey"],
        address=IPv4Interface(_required(values, "Address", "Interface")),
        listen_port=_port(values["ListenPort"], "ListenPort") if "ListenPort" in values else None,
    )
    peers = []
    for kind, values, comment in sections:
        if kind != "Peer":
            continue
        decode_key(_required(values, "PublicKey", "Peer"))
        endpoint = values.get("Endpoint")
        if endpoint is not None:
            host, colon, port = endpoint.rpartition(":")
            if not colon or not host:
                raise ValueError(f"Endpoint {endpoint!r} is not host:port")
            _port(port, "Endpoint port")
        keepalive = values.get("PersistentKeepalive")
        peers.append(
            PeerSection(
                public_key=values["PublicKey"],
                allowed_ips=tuple(
                    IPv4Network(item.strip())
                    for item in _required(values, "AllowedIPs", "Peer").split(",")
                ),
                endpoint=endpoint,
                persistent_keepalive=int(keepalive) if keepalive is not None else None,
                comment=comment,
            )
        )
    keys = [peer.public_key for peer in peers]
    if len(set(keys)) != len(keys):
        raise ValueError("a peer's PublicKey repeats")
    return WireGuardConfig(interface=interface, peers=tuple(peers))
