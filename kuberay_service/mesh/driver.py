"""The driver that applies the mesh on a host: ``wg`` and ``wg-quick``, nothing else.

Every command goes through one :class:`CommandRunner`, so tests run the driver without a
kernel module and record what it would run; on a host the runner is :func:`run_command`.
The private key is only ever written to the 0600 configuration file, never passed on a
command line (other users can read a process's arguments).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from kuberay_service.mesh.config import WireGuardConfig, render_config

__all__ = ["CommandRunner", "MeshCommandError", "WireGuardDriver", "run_command"]

#: The longest a wg or wg-quick command may take.
COMMAND_TIMEOUT_SECONDS = 30


class MeshCommandError(RuntimeError):
    """A wg or wg-quick command failed (its arguments, exit status and error output)."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        super().__init__(f"{' '.join(argv)} failed ({returncode}): {stderr.strip()[:500]}")
        self.argv = tuple(argv)
        self.returncode = returncode


class CommandRunner(Protocol):
    """Runs one command; returns its standard output; raises MeshCommandError on failure."""

    def __call__(self, argv: Sequence[str]) -> str: ...


def run_command(argv: Sequence[str]) -> str:
    """Run ``argv`` on this host (no shell) and return its output."""
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_SECONDS, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MeshCommandError(argv, -1, str(exc)) from exc
    if done.returncode != 0:
        raise MeshCommandError(argv, done.returncode, done.stderr)
    return done.stdout


class WireGuardDriver:
    """One WireGuard interface (``wg0``) of this host, through ``wg`` and ``wg-quick``."""

    def __init__(
        self,
        interface: str = "wg0",
        *,
        runner: CommandRunner = run_command,
        config_dir: Path = Path("/etc/wireguard"),
    ) -> None:
        if not interface.isalnum() or len(interface) > 15:
            raise ValueError(f"{interface!r} is not an interface name")
        self.interface = interface
        self.runner = runner
        self.config_dir = config_dir

    @property
    def config_path(self) -> Path:
        """Where wg-quick reads this interface's configuration."""
        return self.config_dir / f"{self.interface}.conf"

    def write_config(self, config: WireGuardConfig) -> Path:
        """Write the configuration (0600, replaced atomically); its path."""
        self.config_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=self.config_dir, prefix=".wg-", suffix=".conf")
        try:
            with os.fdopen(descriptor, "w") as handle:
                handle.write(render_config(config))
            os.chmod(temporary, 0o600)
            os.replace(temporary, self.config_path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return self.config_path

    def up(self) -> None:
        """Bring the interface up from its configuration file."""
        self.runner(["wg-quick", "up", self.interface])

    def down(self) -> None:
        """Take the interface down."""
        self.runner(["wg-quick", "down", self.interface])

    def save(self) -> None:
        """Write the running peers back to the configuration file (they survive a reboot)."""
        self.runner(["wg-quick", "save", self.interface])

    def peers(self) -> dict[str, tuple[str, ...]]:
        """The running peers: public key -> allowed IPs (``wg show <if> allowed-ips``)."""
        output = self.runner(["wg", "show", self.interface, "allowed-ips"])
        peers: dict[str, tuple[str, ...]] = {}
        for line in output.splitlines():
            public_key, _, allowed = line.strip().partition("\t")
            if public_key:
                peers[public_key] = tuple(
                    item for item in allowed.split() if item and item != "(none)"
                )
        return peers

    def set_peer(self, public_key: str, allowed_ips: Sequence[str]) -> None:
        """Add the peer, or change what it may send from."""
        self.runner(
            ["wg", "set", self.interface, "peer", public_key, "allowed-ips", ",".join(allowed_ips)]
        )

    def remove_peer(self, public_key: str) -> None:
        """Remove the peer: its tunnel ends at once."""
        self.runner(["wg", "set", self.interface, "peer", public_key, "remove"])
