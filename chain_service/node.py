"""A local CometBFT node with Gridweave's ABCI application: set up, started, stopped.

Used by the tests and meant for the all-in-one: ``cometbft init`` makes the home (one
validator, or the files ``cometbft testnet`` wrote for a network), the config is set for
loopback (the RPC, P2P and ABCI ports given, ``timeout_commit``, no empty blocks), then
the ABCI application (``python -m chain_service.abci``) and ``cometbft start`` run as
processes of their own, so either can be killed and started again.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from gridweave_runtime.priority import lower_priority

__all__ = ["LocalNode", "NodePorts", "configure_home", "init_home", "init_testnet", "node_id"]

_START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class NodePorts:
    """The loopback ports of one node."""

    rpc: int
    p2p: int
    abci: int


def init_home(binary: Path, home: Path) -> None:
    """``cometbft init``: a one-validator chain's keys and genesis in ``home``."""
    subprocess.run(
        [str(binary), "init", "--home", str(home)], check=True, capture_output=True, timeout=60
    )


def init_testnet(binary: Path, directory: Path, validators: int) -> list[Path]:
    """``cometbft testnet``: homes ``node0``.. of a ``validators``-validator chain."""
    subprocess.run(
        [
            str(binary),
            "testnet",
            "--v",
            str(validators),
            "--o",
            str(directory),
            "--populate-persistent-peers=false",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return [directory / f"node{index}" for index in range(validators)]


def node_id(binary: Path, home: Path) -> str:
    """The node's P2P id (what a peer address starts with)."""
    result = subprocess.run(
        [str(binary), "show-node-id", "--home", str(home)],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    )
    return result.stdout.strip()


def _set(config: str, section: str, key: str, value: str) -> str:
    """``key = value`` in ``[section]`` of a config.toml (the key must be there)."""
    start = config.index(f"[{section}]") if section else 0
    following = config.find("\n[", start + 1)
    end = len(config) if following < 0 or not section else following
    pattern = re.compile(rf"^{re.escape(key)} = .*$", re.MULTILINE)
    body, count = pattern.subn(f"{key} = {value}", config[start:end], count=1)
    if count != 1:
        raise ValueError(f"config.toml has no {key} in [{section}]")
    return config[:start] + body + config[end:]


def configure_home(
    home: Path,
    ports: NodePorts,
    *,
    timeout_commit: str = "100ms",
    persistent_peers: str = "",
) -> None:
    """Point the node's config at loopback ports and the local ABCI application."""
    path = home / "config" / "config.toml"
    config = path.read_text()
    config = _set(config, "", "proxy_app", f'"tcp://127.0.0.1:{ports.abci}"')
    config = _set(config, "rpc", "laddr", f'"tcp://127.0.0.1:{ports.rpc}"')
    config = _set(config, "p2p", "laddr", f'"tcp://127.0.0.1:{ports.p2p}"')
    config = _set(config, "p2p", "persistent_peers", f'"{persistent_peers}"')
    config = _set(config, "p2p", "addr_book_strict", "false")
    config = _set(config, "p2p", "allow_duplicate_ip", "true")
    config = _set(config, "consensus", "timeout_commit", f'"{timeout_commit}"')
    config = _set(config, "consensus", "create_empty_blocks", "false")
    path.write_text(config)


def node_environment() -> dict[str, str]:
    """cometbft's environment: this process's, with ``GOMAXPROCS`` 1 unless set.

    CometBFT v1.0's consensus reactor wakes every 100 microseconds even when no block is
    being made; on one scheduler thread those wake-ups cost half the CPU they cost on
    several (measured idle: 40 -> 20 ms of CPU a second), and a validator that anchors a
    batch root every few seconds needs no parallelism. An operator's own ``GOMAXPROCS``
    is kept.
    """
    return {**os.environ, "GOMAXPROCS": os.environ.get("GOMAXPROCS", "1")}


def _wait_gone(process: subprocess.Popen[bytes] | None, *, kill: bool) -> None:
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@dataclass
class LocalNode:
    """One node: its home, ports and the two processes (ABCI application and cometbft)."""

    binary: Path
    home: Path
    ports: NodePorts
    trusted_key: str
    #: the niceness both processes start at (0: this process's own); ``CHAIN_NICENESS``
    niceness: int = 0
    application: subprocess.Popen[bytes] | None = field(default=None, init=False)
    node: subprocess.Popen[bytes] | None = field(default=None, init=False)

    @property
    def rpc_url(self) -> str:
        """The node's RPC base URL."""
        return f"http://127.0.0.1:{self.ports.rpc}"

    def start(self, *, wait: bool = True) -> None:
        """Start the application, then cometbft; with ``wait``, until its RPC answers."""
        with (self.home / "abci.log").open("ab") as log:
            self.application = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "chain_service.abci",
                    "--trusted-key",
                    self.trusted_key,
                    "--listen",
                    f"127.0.0.1:{self.ports.abci}",
                    "--state-file",
                    str(self.home / "gridweave-anchors.json"),
                ],
                stdout=log,
                stderr=log,
                preexec_fn=self._lower_priority,
            )
        self._wait_for_port(self.ports.abci)
        with (self.home / "cometbft.log").open("ab") as log:
            self.node = subprocess.Popen(
                [str(self.binary), "start", "--home", str(self.home)],
                stdout=log,
                stderr=log,
                env=node_environment(),
                preexec_fn=self._lower_priority,
            )
        if wait:
            self.wait_ready()

    def _lower_priority(self) -> None:
        # in the child, before exec: every thread cometbft starts is born at this niceness
        lower_priority(self.niceness)

    def _wait_for_port(self, port: int) -> None:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while True:
            if self.application is not None and self.application.poll() is not None:
                raise RuntimeError(f"the ABCI application exited: {self.read_log('abci')}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the ABCI application did not listen") from None
                time.sleep(0.05)

    def wait_ready(self) -> None:
        """Until the node's RPC answers /status and it has made a block."""
        deadline = time.monotonic() + _START_TIMEOUT_S
        while True:
            if self.node is not None and self.node.poll() is not None:
                raise RuntimeError(f"cometbft exited: {self.read_log('cometbft')[-4000:]}")
            try:
                status = httpx.get(f"{self.rpc_url}/status", timeout=2).json()["result"]
                if int(status["sync_info"]["latest_block_height"]) >= 1:
                    return
            except (httpx.HTTPError, KeyError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"cometbft not ready: {self.read_log('cometbft')[-4000:]}")
            time.sleep(0.1)

    def stop(self, *, kill: bool = False) -> None:
        """Stop cometbft, then the application (``kill``: SIGKILL, no goodbye)."""
        _wait_gone(self.node, kill=kill)
        _wait_gone(self.application, kill=kill)

    def read_log(self, name: str) -> str:
        """The text of ``abci.log`` or ``cometbft.log``."""
        path = self.home / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def chain_id(self) -> str:
        """The chain id of the node's genesis."""
        genesis = json.loads((self.home / "config" / "genesis.json").read_text())
        return str(genesis["chain_id"])


def _source_binary() -> Path:
    """The cometbft of a source checkout: ``tools/cometbft/build.sh`` (cached)."""
    script = Path(__file__).resolve().parents[1] / "tools" / "cometbft" / "build.sh"
    result = subprocess.run([str(script)], check=True, capture_output=True, text=True)
    return Path(result.stdout.strip().splitlines()[-1]) / "cometbft"


def main(argv: list[str] | None = None) -> int:
    """``python -m chain_service.node``: one local validator and the application, until
    SIGINT or SIGTERM. The home is made on first use; the application trusts the key in
    chain_service's signing key file (made there if missing, so chain_service finds it).
    """
    import argparse

    from chain_service.settings import ChainSettings
    from chain_service.signing import load_signing_key

    settings = ChainSettings()
    parser = argparse.ArgumentParser(prog="python -m chain_service.node")
    parser.add_argument("--home", type=Path, default=settings.state_dir / "cometbft")
    parser.add_argument("--binary", type=Path, default=None, help="default: tools/cometbft")
    parser.add_argument("--rpc-port", type=int, default=26657)
    parser.add_argument("--p2p-port", type=int, default=26656)
    parser.add_argument("--abci-port", type=int, default=26658)
    parser.add_argument("--timeout-commit", default="100ms")
    arguments = parser.parse_args(argv)
    binary = arguments.binary or _source_binary()
    key = load_signing_key(settings.resolved_signing_key_file())
    home: Path = arguments.home
    if not (home / "config" / "genesis.json").exists():
        init_home(binary, home)
    ports = NodePorts(rpc=arguments.rpc_port, p2p=arguments.p2p_port, abci=arguments.abci_port)
    configure_home(home, ports, timeout_commit=arguments.timeout_commit)
    node = LocalNode(binary, home, ports, key.public_key_hex, settings.niceness)
    stop = False

    def request_stop(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    try:
        node.start()
        print(f"CHAIN_COMETBFT_RPC_URL={node.rpc_url}", flush=True)
        while not stop and all(
            p is not None and p.poll() is None for p in (node.node, node.application)
        ):
            time.sleep(0.2)
    finally:
        node.stop()
    return 0 if stop else 1


if __name__ == "__main__":
    sys.exit(main())
