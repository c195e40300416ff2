"""The test cluster's LAN: a bridge in a network namespace of its own, one veth per machine.

The host's network is never touched: the bridge, and one end of each machine's cable, live
in the LAN's namespace; the other end is moved straight into the machine's namespace as
its ``eth0``.
"""

from __future__ import annotations

import time
from pathlib import Path

from tests.support.cluster.machine import Machine, MachineSpec

__all__ = ["Lan"]


class Lan:
    """The LAN machine (a network namespace with the bridge ``br0``)."""

    def __init__(self, workdir: Path, *, cgroup: str) -> None:
        self.machine = Machine(
            MachineSpec(hostname="lan", pid_namespace=False, cgroup=cgroup), workdir
        )
        self.machine.run(["ip", "link", "add", "br0", "type", "bridge"])
        self.machine.run(["ip", "link", "set", "br0", "up"])

    def wire(self, machine: Machine, address: str, prefix: int) -> None:
        """A cable from the bridge to ``machine``, whose ``eth0`` gets ``address``."""
        port = f"to-{machine.name}"[:15]
        # a machine started again: its old cable goes with its old namespace, which the
        # kernel cleans up a moment after the last process ended
        deadline = time.monotonic() + 30
        while self.machine.run(["ip", "link", "show", port], check=False).returncode == 0:
            if time.monotonic() > deadline:
                self.machine.run(["ip", "link", "del", port])
                break
            time.sleep(0.2)
        self.machine.run(
            [
                "ip",
                "link",
                "add",
                port,
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                str(machine.init_pid),
            ]
        )
        self.machine.run(["ip", "link", "set", port, "master", "br0"])
        self.machine.run(["ip", "link", "set", port, "up"])
        machine.run(["ip", "addr", "add", f"{address}/{prefix}", "dev", "eth0"])
        machine.run(["ip", "link", "set", "eth0", "up"])

    def unplug(self, machine: Machine) -> None:
        """Pull ``machine``'s cable (its end in the LAN goes down)."""
        self.machine.run(["ip", "link", "set", f"to-{machine.name}"[:15], "down"])

    def stop(self) -> None:
        self.machine.stop()
