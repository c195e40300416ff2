"""A stand-in for the ``wg`` and ``wg-quick`` commands: peers kept in memory, argv recorded.

It answers what the real tools answer for the commands the driver runs (``wg show <if>
allowed-ips`` lists ``<key>\\t<ips>`` lines, ``(none)`` for a peer without any) and fails like
them on an unknown interface, so the driver is tested without a kernel module.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from kuberay_service.mesh import MeshCommandError


class FakeWg:
    """The interfaces' peers (public key -> allowed IPs) and every command run."""

    def __init__(self, interface: str = "wg0") -> None:
        self.interface = interface
        self.peers: dict[str, tuple[str, ...]] = {}
        self.commands: list[tuple[str, ...]] = []
        self.saved: dict[str, tuple[str, ...]] | None = None
        self._lock = threading.Lock()

    def __call__(self, argv: Sequence[str]) -> str:
        with self._lock:
            self.commands.append(tuple(argv))
            return self._run(list(argv))

    def _run(self, argv: list[str]) -> str:
        tool, verb, interface, *rest = argv
        if interface != self.interface:
            raise MeshCommandError(argv, 1, f"Unable to access interface: {interface}")
        if (tool, verb) == ("wg", "show") and rest == ["allowed-ips"]:
            return "".join(
                f"{key}\t{' '.join(ips) or '(none)'}\n" for key, ips in self.peers.items()
            )
        if (tool, verb) == ("wg", "set") and rest[:1] == ["peer"]:
            key, *change = rest[1:]
            if change == ["remove"]:
                self.peers.pop(key, None)
            elif change[:1] == ["allowed-ips"] and len(change) == 2:
                self.peers[key] = tuple(change[1].split(","))
            else:
                raise MeshCommandError(argv, 1, "Invalid argument")
            return ""
        if tool == "wg-quick" and verb in ("up", "down", "save") and not rest:
            if verb == "save":
                self.saved = dict(self.peers)
            return ""
        raise MeshCommandError(argv, 1, "Invalid argument")
