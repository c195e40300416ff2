"""The test cluster every module here shares: a master (the all-in-one) started once, and
two nodes joined once (``joined``); modules that kill or remove nodes add their own."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.support.cluster.cluster import Cluster, running_cluster
from tests.support.cluster.node import Node
from tests.support.cluster.prerequisites import require_cluster_tools
from tests.support.sandbox import sandbox_config

#: The master's own simulated GPU, smaller than every node's: a job of more VRAM goes to a
#: joined node, and the node is chosen by VRAM (node-2's is the largest).
MASTER_VRAM_MB = 16384
NODE_1_VRAM_MB = 24576
NODE_2_VRAM_MB = 49152


@dataclass
class Joined:
    """The shared cluster and its two joined nodes."""

    cluster: Cluster
    node_1: Node
    node_2: Node
    join_seconds: float


@pytest.fixture(scope="package")
def cluster() -> Iterator[Cluster]:
    require_cluster_tools()
    sandbox_config()  # the default job image (make sandbox): every job runs in a container
    environment = {"GATEWAY_SIMULATED_GPU_VRAM_MB": str(MASTER_VRAM_MB)}
    with running_cluster(environment=environment) as started:
        yield started


@pytest.fixture(scope="package")
def joined(cluster: Cluster) -> Joined:
    node_1, node_2 = cluster.add_node(), cluster.add_node()
    began = time.monotonic()
    cluster.join(node_1, vram_mb=NODE_1_VRAM_MB)
    seconds = time.monotonic() - began
    cluster.join(node_2, vram_mb=NODE_2_VRAM_MB)
    for node in (node_1, node_2):
        cluster.wait_node(node.name, ready=True)
        cluster.wait_ray_worker(node)
    return Joined(cluster, node_1, node_2, seconds)
