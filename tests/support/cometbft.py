"""A real CometBFT on loopback for the anchoring tests: built once, one node per fixture."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import cache
from pathlib import Path
from typing import TypeVar

from chain_service.node import (
    LocalNode,
    NodePorts,
    configure_home,
    init_home,
    init_testnet,
    node_id,
)
from tests.support.http_server import free_ports
from tests.support.unavailable import entered_or_skip

REPO_ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


class CometBFTUnavailable(RuntimeError):
    """CometBFT cannot be built here."""


@cache
def cometbft_binary() -> Path:
    """The pinned cometbft (tools/cometbft/build.sh: cached, built on first use)."""
    try:
        result = subprocess.run(
            [str(REPO_ROOT / "tools" / "cometbft" / "build.sh")],
            capture_output=True,
            text=True,
            timeout=900,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise CometBFTUnavailable(f"tools/cometbft/build.sh failed: {exc}") from exc
    binary = Path(result.stdout.strip().splitlines()[-1]) / "cometbft"
    if not binary.exists():
        raise CometBFTUnavailable(f"no cometbft in {binary.parent}")
    return binary


def started_or_skip(context: AbstractContextManager[T]) -> AbstractContextManager[T]:
    """``context`` (a node or a network) entered for the block; CometBFT unavailable fails
    the run under CI=true, else skips."""
    return entered_or_skip("CometBFT", context, CometBFTUnavailable)


@contextmanager
def single_node(home: Path, trusted_key: str, *, niceness: int = 0) -> Iterator[LocalNode]:
    """A one-validator chain (timeout_commit 100 ms) running Gridweave's application, its
    two processes at ``niceness`` (0: this process's own)."""
    binary = cometbft_binary()
    init_home(binary, home)
    ports = NodePorts(*free_ports(3))
    configure_home(home, ports)
    node = LocalNode(binary, home, ports, trusted_key, niceness)
    try:
        node.start()
        yield node
    finally:
        node.stop()


@contextmanager
def validator_network(
    directory: Path, trusted_key: str, size: int = 4
) -> Iterator[list[LocalNode]]:
    """``size`` validators on loopback, each peered with all the others, all started."""
    binary = cometbft_binary()
    homes = init_testnet(binary, directory, size)
    picked = free_ports(3 * len(homes))  # all different: a node's port is no other's
    ports = [NodePorts(*picked[3 * index : 3 * index + 3]) for index in range(len(homes))]
    addresses = [
        f"{node_id(binary, home)}@127.0.0.1:{p.p2p}" for home, p in zip(homes, ports, strict=True)
    ]
    nodes = []
    for index, (home, node_ports) in enumerate(zip(homes, ports, strict=True)):
        peers = ",".join(address for other, address in enumerate(addresses) if other != index)
        configure_home(home, node_ports, persistent_peers=peers)
        nodes.append(LocalNode(binary, home, node_ports, trusted_key))
    try:
        for node in nodes:
            node.start(wait=False)
        for node in nodes:
            node.wait_ready()
        yield nodes
    finally:
        for node in nodes:
            node.stop()
