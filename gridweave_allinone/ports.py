"""Every port ``gridweave up`` needs, checked before anything starts, and who holds one.

A port another process holds would otherwise fail one service minutes into the start (or,
for a socket bound with ``SO_REUSEPORT`` such as another Ray Serve proxy, share its
connections with the other process in silence: Serve binds that way). So the all-in-one
tries to bind each of its ports, as the service will, before it starts anything, and names
each one that is taken with the process that holds it (its pid and command, where this
user may see them) and the way out (``GRIDWEAVE_PORT_OFFSET``, or stopping the holder).
"""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass

import psutil

from gridweave_allinone.settings import DEFAULT_PORTS, AllInOneSettings

__all__ = ["PortsInUse", "TakenPort", "check_ports", "needed_ports", "taken_ports"]


class PortsInUse(RuntimeError):
    """A port the all-in-one needs is taken; the message names each one and its holder."""


@dataclass(frozen=True, slots=True)
class TakenPort:
    """A port the all-in-one needs, bound by another process (``holder``: its pid and
    command, or why it cannot be named)."""

    name: str
    port: int
    holder: str


def needed_ports(settings: AllInOneSettings) -> dict[str, int]:
    """The name and port of each listener the all-in-one will start with ``settings``."""
    names = [
        name
        for name in DEFAULT_PORTS
        if not (name == "kubeapi" and settings.kubeconfig is not None)
        and not (name == "cometbft" and not settings.chain_enabled)
    ]
    ports = {name: settings.port(name) for name in names}
    if settings.chain_enabled:  # CometBFT's P2P and the ABCI application below its RPC
        rpc = ports["cometbft"]
        ports |= {"cometbft p2p": rpc - 1, "chain abci": rpc - 2}
    return ports


def taken_ports(host: str, ports: dict[str, int], *, own: str | None = None) -> list[TakenPort]:
    """Those of ``ports`` that a socket bound to ``host`` cannot have now; with ``own``,
    not those whose every listener's command line names it (this state directory's own
    processes, such as a Ray head that outlived a killed ``gridweave up``: the gateway takes
    its own head back)."""
    listening = _listeners()
    taken = []
    for name, port in ports.items():
        pids = listening.get(port, [])
        if not (_bind_refused(host, port) or pids):
            continue
        if own is not None and pids and all(own in _command(pid) for pid in pids):
            continue
        taken.append(TakenPort(name, port, _holder(pids)))
    return taken


def check_ports(settings: AllInOneSettings) -> None:
    """Raise :class:`PortsInUse` naming every port of ``settings`` that another process
    holds (its own state directory's processes excepted)."""
    taken = taken_ports(
        settings.host, needed_ports(settings), own=str(settings.state_dir.resolve())
    )
    if not taken:
        return
    lines = "; ".join(f"{t.port} ({t.name}) is held by {t.holder}" for t in taken)
    raise PortsInUse(
        f"ports in use: {lines}. Stop what holds them, or run this copy on other ports "
        f"(GRIDWEAVE_PORT_OFFSET, now {settings.port_offset}: e.g. 100 puts the platform on "
        f"{8100 + 100})"
    )


def _bind_refused(host: str, port: int) -> bool:
    """A socket bound to ``host`` as the services bind cannot have ``port`` now."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the services bind
        try:
            probe.bind((host or "0.0.0.0", port))
        except OSError as error:
            return error.errno in (errno.EADDRINUSE, errno.EACCES)
    return False


def _listeners() -> dict[int, list[int | None]]:
    """Each port some socket of the machine listens on, on any address (0.0.0.0 against
    127.0.0.1, or with ``SO_REUSEPORT``: either would take connections meant for the
    service), with the listeners' pids (None: one this user may not see)."""
    try:
        connections = psutil.net_connections(kind="inet")
    except psutil.AccessDenied:
        return {}
    listening: dict[int, list[int | None]] = {}
    for c in connections:
        if c.status == psutil.CONN_LISTEN and c.laddr:
            listening.setdefault(c.laddr.port, []).append(c.pid)
    return listening


def _command(pid: int | None) -> str:
    if pid is None:
        return ""
    try:
        return " ".join(psutil.Process(pid).cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return ""


def _holder(pids: list[int | None]) -> str:
    """``pid N (command line)`` of a listener among ``pids``, or why it is unnamed."""
    pid = next((pid for pid in pids if pid is not None), None)
    if pid is None:
        return "a process this user may not see (ss -ltnp names it as root)"
    command = _command(pid)
    return f"pid {pid} ({command[:120]})" if command else f"pid {pid}"
