"""The head's Ray node table, read by a driver process on the master (never in the test's
own process, which may hold another Ray)."""

from __future__ import annotations

import json
import sys
from typing import Any

from tests.support.cluster.master import Master

__all__ = ["ray_nodes"]

_MARK = "GRIDWEAVE_RAY_NODES="
_READ = """
import json, ray
ray.init(
    address="{address}", namespace="gridweave-probe", logging_level="ERROR", log_to_driver=False
)
print("GRIDWEAVE_RAY_NODES=" + json.dumps([
    {{"alive": n["Alive"], "ip": n["NodeManagerAddress"], "node_id": n["NodeID"],
      "labels": n.get("Labels", {{}}), "gpus": n["Resources"].get("GPU", 0)}}
    for n in ray.nodes()
]), flush=True)
"""


def ray_nodes(master: Master) -> list[dict[str, Any]]:
    """Every Ray node the head knows: alive, its address, its labels and GPUs."""
    token = master.ray_token_path()
    done = master.running.run(
        [sys.executable, "-c", _READ.format(address=master.ray_address)],
        env={"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    # the driver's own messages may follow (a backtrace printed as it exits): the marked line
    found = [line for line in done.stdout.splitlines() if line.startswith(_MARK)]
    assert found, f"the Ray node table was not printed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return list(json.loads(found[-1].removeprefix(_MARK)))
