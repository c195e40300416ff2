"""``make cluster-demo``: a master and two GPU nodes on this machine, in namespaces.

The master runs ``gridweave up``; two nodes join it with the real ``deploy/join-node.sh``
over WireGuard; a job runs on the master's own GPU and one on node 2; node 1 is killed and
goes NotReady; then everything stops and the host is checked for leftovers. Root, the
cluster's tools (``make cluster-tools``) and the default job image (``make sandbox``) are
needed. Prints what it does and how long each step took.
"""

from __future__ import annotations

import json
import sys
import time

import cloudpickle

import gridweave as gw
from tests.cluster import functions
from tests.support.cluster.cluster import running_cluster
from tests.support.cluster.prerequisites import require_cluster_tools

__all__ = ["main"]


def _say(began: float, text: str) -> None:
    print(f"[{time.monotonic() - began:6.1f} s] {text}", flush=True)


def main() -> None:
    """Run the demo; exit status 0 when every step worked and nothing was left behind."""
    require_cluster_tools()
    cloudpickle.register_pickle_by_value(functions)
    began = time.monotonic()
    _say(began, "starting the LAN and the master (gridweave up in its own namespaces)")
    environment = {"GATEWAY_SIMULATED_GPU_VRAM_MB": "16384"}
    with running_cluster(environment=environment, prefix="gwc-demo-") as cluster:
        _say(began, f"master up: platform, kuberay-service on {cluster.master.kuberay_url}")
        nodes = [cluster.add_node(), cluster.add_node()]
        for node, vram in zip(nodes, (24576, 49152), strict=True):
            cluster.join(node, vram_mb=vram)
            cluster.wait_node(node.name, ready=True)
            _say(began, f"{node.name} joined: mesh address {node.vpn_ip}, {vram} MiB GPU")
            _say(began, f"  its Ray worker: {node.ray_worker_mode()}")
        print(cluster.gridweave("nodes").stdout, flush=True)
        master = cluster.master
        with master.network():
            gw.configure(url=master.platform_url, api_key=master.admin_api_key())
            for asked, where in (("8GB", "anywhere"), ("30GB", "only node-2 holds 30 GB")):
                handle = gw.function(vram=asked)(functions.where_am_i).spawn()
                seen = handle.result(timeout=300)
                status = handle.status()
                _say(began, f"job of {asked} ({where}) ran on {status.node}: {json.dumps(seen)}")
        nodes[0].kill()
        _say(began, f"{nodes[0].name} killed (SIGKILL to its init)")
        cluster.wait_node(nodes[0].name, ready=False)
        _say(began, f"{nodes[0].name} is NotReady in gridweave nodes")
        _say(began, "stopping everything")
    _say(began, "stopped; nothing left on the host (iptables, /run, /etc, links, cgroups)")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)
