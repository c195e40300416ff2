"""A job container's way out (``GATEWAY_JOB_NETWORK=egress``, and every ``pip=`` build):
the internet through a network namespace of its own, never the node or the node's networks.

The container's network namespace is still the runtime's own (as with no network: runc can
mount a fresh ``/sys`` only in a network namespace its user namespace owns); the trusted
side wires it before any of the container's code runs:

- **a veth pair per container** (:func:`attach`): the worker (root) makes ``gwv<n>`` on the
  node with the first host of a /30 of the pool (``GATEWAY_SANDBOX_EGRESS_POOL``; slot ``n``
  recorded under ``<state>/network/links``), and the runtime's ``createRuntime`` hook
  (:meth:`NetworkLink.hook`, run by runc as root on the node once the container's
  namespaces exist, before its process starts) moves the peer into the container's namespace
  as ``eth0`` with the /30's second host and a default route through the first, and turns
  IPv6 off there (and on ``gwv<n>``: a job has no IPv6 at all);
- **the rules** (:func:`egress_rules`), one set for every container of the node, in chains
  of Gridweave's own (``GW-EGRESS-IN``, ``GW-EGRESS-FWD``, ``GW-EGRESS-NAT``) reached from
  ``INPUT``, ``FORWARD`` and ``nat POSTROUTING``; installed when missing or different
  (checked at every attach, with a marker carrying their digest; one writer at a time, under
  a lock), so they come back after a firewall reload flushed them:
  every packet from a container to the node itself (any of its addresses) is refused, but
  DNS to the node's resolvers; forwarded packets from a container to the private,
  loopback, link-local, CGNAT, multicast and reserved ranges, to the node's own subnets and
  to the configured ranges (``GATEWAY_SANDBOX_EGRESS_BLOCKED``: the cluster's LAN or mesh
  when public) are refused, but DNS to the resolvers; a packet from a container with an
  address not of the pool is dropped; nothing starts a connection towards a container
  (another container included); the rest goes out masqueraded as the node;
- **DNS**: a ``resolv.conf`` naming the node's resolvers (``GATEWAY_SANDBOX_EGRESS_DNS``, else
  the node's own, a loopback stub such as systemd-resolved's replaced by its upstreams) is
  bound read-only over the image's ``/etc/resolv.conf``.

The container's process has no capability, so it cannot change its address, routes or
anything of the node; the rules live in the node's own network namespace (owned by the
initial user namespace), which nothing in a container can reach. When the container is
deleted its namespace goes and the veth pair with it; :func:`release` deletes the pair at
once and frees the slot, and :func:`sweep_links` does so for containers whose worker died.
Forwarding (``net.ipv4.ip_forward``) is turned on at the first attach.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import ipaddress
import os
import subprocess
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "BLOCKED_RANGES",
    "DEFAULT_POOL",
    "Egress",
    "NetworkLink",
    "NetworkUnavailable",
    "attach",
    "egress_rules",
    "node_resolvers",
    "release",
    "sweep_links",
]

#: The addresses of the containers' veth pairs (a /30 each), unless configured.
DEFAULT_POOL = "10.234.0.0/16"
#: Ranges no job reaches: "this network", private, CGNAT, loopback, link-local, IETF
#: protocol assignments, benchmarking, multicast, reserved and broadcast.
BLOCKED_RANGES = (
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "224.0.0.0/4",
    "240.0.0.0/4",
)
_HOST_PREFIX = "gwv"
_PEER_PREFIX = "gwc"
_CHAIN_IN = "GW-EGRESS-IN"
_CHAIN_FORWARD = "GW-EGRESS-FWD"
_CHAIN_NAT = "GW-EGRESS-NAT"
_MARKER = "gw-egress-"
_REJECT = "-j REJECT --reject-with icmp-admin-prohibited"
#: The jumps into Gridweave's chains: (table, chain, the rule's match and target).
_JUMPS = (
    ("filter", "INPUT", f"-i {_HOST_PREFIX}+ -j {_CHAIN_IN}"),
    ("filter", "FORWARD", f"-j {_CHAIN_FORWARD}"),
    ("nat", "POSTROUTING", f"-j {_CHAIN_NAT}"),
)
_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
#: Run by the runtime on the node (``createRuntime``): the container's pid from its state on
#: stdin; IPv6 off in its namespace before the peer arrives (a moved link takes the
#: namespace's defaults), then the peer moved in as eth0 with its address and route.
_ATTACH_SCRIPT = r"""set -e
pid=$(sed -n 's/.*"pid": *\([0-9][0-9]*\).*/\1/p')
[ -n "$pid" ]
net=/proc/$pid/ns/net
nsenter --net="$net" sysctl -e -q -w net.ipv6.conf.all.disable_ipv6=1 \
  net.ipv6.conf.default.disable_ipv6=1 || true
ip link set "$1" netns "$pid"
printf 'link set %s name eth0\naddr add %s dev eth0\nlink set eth0 up\nroute add default via %s\n' \
  "$1" "$2" "$3" | nsenter --net="$net" ip -batch -
"""


class NetworkUnavailable(Exception):
    """The node could not give a container its egress network (the message says why)."""


@dataclass(frozen=True, slots=True)
class Egress:
    """A node's egress settings: the veth pool, the ranges refused besides
    :data:`BLOCKED_RANGES` and the node's subnets, and the resolvers (empty: the node's)."""

    pool: str = DEFAULT_POOL
    blocked: tuple[str, ...] = ()
    dns: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NetworkLink:
    """One container's veth pair: the slot of the pool, the container's address (CIDR), its
    gateway (the node's end), and the ``resolv.conf`` to bind over the image's."""

    slot: int
    address: str
    gateway: str
    resolv_conf: Path | None

    @property
    def host_veth(self) -> str:
        return f"{_HOST_PREFIX}{self.slot}"

    @property
    def peer_veth(self) -> str:
        return f"{_PEER_PREFIX}{self.slot}"

    def hook(self) -> dict[str, Any]:
        """The ``createRuntime`` hook that moves the peer into the container's namespace."""
        return {
            "path": "/bin/sh",
            "args": ["sh", "-c", _ATTACH_SCRIPT, "sh", self.peer_veth, self.address, self.gateway],
            "env": [f"PATH={_PATH}"],
            "timeout": 30,
        }


def attach(state_dir: Path, egress: Egress, owner: str) -> NetworkLink:
    """A veth pair for the container ``owner`` (its name), the node's rules and resolvers
    made ready first.

    Raises:
        NetworkUnavailable: a tool failed, or the pool has no free /30.
    """
    directory = _network_dir(state_dir)
    pool = ipaddress.IPv4Network(egress.pool)
    resolvers = tuple(egress.dns) or node_resolvers()
    blocked = (*egress.blocked, *_node_subnets(pool))
    _ensure_rules(directory, egress_rules(pool=pool, blocked=blocked, resolvers=resolvers))
    resolv_conf = _write_resolv_conf(directory, resolvers)
    slot = _take_slot(directory, pool, owner)
    base = pool.network_address + 4 * slot
    link = NetworkLink(slot, f"{base + 2}/30", str(base + 1), resolv_conf)
    try:
        _delete_link(link.host_veth)  # a pair a crash left before its slot was freed
        _ip("link", "add", link.host_veth, "type", "veth", "peer", "name", link.peer_veth)
        for name in (link.host_veth, link.peer_veth):
            _no_ipv6(name)
        _ip("addr", "add", f"{base + 1}/30", "dev", link.host_veth)
        _ip("link", "set", link.host_veth, "up")
    except BaseException:
        release(state_dir, link)
        raise
    return link


def release(state_dir: Path, link: NetworkLink) -> None:
    """Delete the container's veth pair (if its namespace has not taken it already) and
    free its slot."""
    _delete_link(link.host_veth)
    with contextlib.suppress(FileNotFoundError):
        (_links_dir(state_dir) / str(link.slot)).unlink()


def sweep_links(state_dir: Path, gone: Callable[[str], bool]) -> list[str]:
    """Release the links of containers for which ``gone(name)`` holds; their names."""
    links = _links_dir(state_dir)
    swept = []
    for entry in sorted(links.iterdir()) if links.is_dir() else ():
        if not entry.name.isdigit():
            continue
        try:
            owner = entry.read_text().strip()
        except OSError:
            continue
        if gone(owner):
            _delete_link(f"{_HOST_PREFIX}{entry.name}")
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
            swept.append(owner)
    return swept


def egress_rules(
    *,
    pool: ipaddress.IPv4Network,
    blocked: Iterable[str],
    resolvers: Iterable[str],
) -> str:
    """The node's rules for every container's egress, as ``iptables-restore --noflush``
    input (declaring a chain empties it first), with a marker carrying their digest."""
    veths = f"{_HOST_PREFIX}+"
    dns = [
        f"-d {resolver}/32 -p {protocol} -m {protocol} --dport 53 -j ACCEPT"
        for resolver in resolvers
        for protocol in ("udp", "tcp")
    ]
    ranges = sorted(
        {str(ipaddress.IPv4Network(cidr, strict=False)) for cidr in (*BLOCKED_RANGES, *blocked)}
    )
    into_node = [*dns, _REJECT]
    forward = [
        f"-o {veths} -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
        f"-o {veths} -j DROP",
        f"-i {veths} ! -s {pool} -j DROP",
        *(f"-i {veths} {rule}" for rule in dns),
        *(f"-i {veths} -d {cidr} {_REJECT}" for cidr in ranges),
        f"-i {veths} -j ACCEPT",
    ]
    nat = [f"-s {pool} ! -o {veths} -j MASQUERADE"]
    tables = {
        "filter": {_CHAIN_IN: into_node, _CHAIN_FORWARD: forward},
        "nat": {_CHAIN_NAT: nat},
    }

    def render(marker: str | None) -> str:
        lines = []
        for table, chains in tables.items():
            lines += [f"*{table}", *(f":{chain} - [0:0]" for chain in chains)]
            for chain, rules in chains.items():
                if marker is not None:  # first in each chain, a rule that does nothing
                    lines.append(f"-A {chain} -m comment --comment {marker}")
                lines += [f"-A {chain} {rule}" for rule in rules]
            lines.append("COMMIT")
        return "\n".join(lines) + "\n"

    digest = hashlib.sha256(render(None).encode()).hexdigest()[:16]
    return render(f"{_MARKER}{digest}")


def node_resolvers() -> tuple[str, ...]:
    """The node's IPv4 DNS resolvers; a loopback stub (systemd-resolved's) is replaced by
    the upstreams it names."""
    for path in (Path("/etc/resolv.conf"), Path("/run/systemd/resolve/resolv.conf")):
        found = [
            address
            for address in _nameservers(path)
            if not ipaddress.IPv4Address(address).is_loopback
        ]
        if found:
            return tuple(dict.fromkeys(found))
    return ()


# -- helpers ---------------------------------------------------------------------------------


def _ensure_rules(directory: Path, rules: str) -> None:
    """Install ``rules`` and the jumps into them unless the node has them already."""
    marker = rules.split("--comment ", 1)[1].split()[0]
    if _installed(marker):
        _forwarding_on()
        return
    with _locked(directory / "rules.lock"):
        if not _installed(marker):
            _run(["iptables-restore", "-w", "--noflush"], stdin=rules, what="installing rules")
            for table, chain, rule in _JUMPS:
                check = ["iptables", "-w", "-t", table, "-C", chain, *rule.split()]
                if subprocess.run(check, capture_output=True, check=False).returncode != 0:
                    insert = ["iptables", "-w", "-t", table, "-I", chain, "1", *rule.split()]
                    _run(insert, what=f"adding the jump from {chain}")
        _forwarding_on()


def _installed(marker: str) -> bool:
    saved = _run(["iptables-save"], what="reading the node's rules")
    rules = saved.splitlines()
    if sum(marker in line for line in rules) != 3:
        return False
    return all(
        any(line.startswith(f"-A {chain} ") and f"-j {rule.split()[-1]}" in line for line in rules)
        for _, chain, rule in _JUMPS
    )


def _forwarding_on() -> None:
    switch = Path("/proc/sys/net/ipv4/ip_forward")
    if switch.read_text().strip() != "1":
        switch.write_text("1\n")


def _node_subnets(pool: ipaddress.IPv4Network) -> list[str]:
    """The subnets of the node's own IPv4 addresses (its LAN, its mesh), ours left out."""
    shown = _run(["ip", "-4", "-o", "addr", "show"], what="listing the node's addresses")
    subnets = []
    for line in shown.splitlines():
        words = line.split()
        if "inet" not in words:
            continue
        interface = ipaddress.IPv4Interface(words[words.index("inet") + 1])
        if interface.ip.is_loopback or interface.network.subnet_of(pool):
            continue
        subnets.append(str(interface.network))
    return subnets


def _nameservers(path: Path) -> list[str]:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        words = line.split()
        if len(words) >= 2 and words[0] == "nameserver":
            with contextlib.suppress(ValueError):
                found.append(str(ipaddress.IPv4Address(words[1])))
    return found


def _write_resolv_conf(directory: Path, resolvers: tuple[str, ...]) -> Path:
    """The containers' ``resolv.conf`` (rewritten by rename when the resolvers change:
    running containers keep what they had)."""
    path = directory / "resolv.conf"
    text = "".join(f"nameserver {resolver}\n" for resolver in resolvers) or "# no resolver\n"
    with contextlib.suppress(OSError):
        if path.read_text() == text:
            return path
    partial = directory / f".resolv.conf.{os.getpid()}"
    partial.write_text(text)
    partial.chmod(0o644)  # read by every container's uid
    partial.rename(path)
    return path


def _take_slot(directory: Path, pool: ipaddress.IPv4Network, owner: str) -> int:
    """The lowest free /30 of the pool, recorded as ``owner``'s."""
    links = directory / "links"
    links.mkdir(mode=0o700, exist_ok=True)
    taken = {int(entry.name) for entry in links.iterdir() if entry.name.isdigit()}
    for slot in range(pool.num_addresses // 4):
        if slot in taken:
            continue
        try:
            fd = os.open(links / str(slot), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue  # another worker took it meanwhile
        with os.fdopen(fd, "w") as record:
            record.write(owner)
        return slot
    raise NetworkUnavailable(f"every /30 of the egress pool {pool} is taken")


def _network_dir(state_dir: Path) -> Path:
    directory = state_dir / "network"
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o711)  # containers' uids pass through to resolv.conf, never list
    return directory


def _links_dir(state_dir: Path) -> Path:
    return state_dir / "network" / "links"


def _no_ipv6(interface: str) -> None:
    switch = Path(f"/proc/sys/net/ipv6/conf/{interface}/disable_ipv6")
    with contextlib.suppress(FileNotFoundError):  # a kernel without IPv6
        switch.write_text("1\n")


def _delete_link(name: str) -> None:
    subprocess.run(["ip", "link", "del", name], capture_output=True, timeout=30, check=False)


def _ip(*args: str) -> None:
    _run(["ip", *args], what=f"ip {' '.join(args[:2])}")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _run(command: list[str], *, what: str, stdin: str | None = None) -> str:
    try:
        done = subprocess.run(
            command, input=stdin, capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise NetworkUnavailable(f"{what}: {command[0]} did not run ({error})") from None
    if done.returncode != 0:
        words = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise NetworkUnavailable(f"{what} failed: {words[-1][:300] if words else done.returncode}")
    return done.stdout
