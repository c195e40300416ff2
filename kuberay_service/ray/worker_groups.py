"""A joined node's RayCluster worker group, computed (no I/O).

One group per joined node, named ``gw-<node>``: one Ray worker pod pinned to the node
(``nodeSelector`` on the ``gridweave.io/node`` label its K3s agent carries), asking
Kubernetes for every GPU of the node (``nvidia.com/gpu`` / ``amd.com/gpu``, both on a
mixed node), with the GPUs as Ray's ``GPU`` resource and the Gridweave node name as a Ray
node label, so the executor can pin a task to the node the gateway chose. Groups whose
name lacks the prefix are someone else's and are kept as they are.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

from gridweave_clients.nodes import NodeResponse

__all__ = [
    "GROUP_PREFIX",
    "NODE_LABEL",
    "covers",
    "desired_worker_groups",
    "group_name",
    "worker_group",
]

GROUP_PREFIX = "gw-"
#: The Kubernetes node label (set by join-node.sh) and the Ray node label naming the node.
NODE_LABEL = "gridweave.io/node"
_DEVICE_RESOURCE = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu"}
# group names go into pod names (with the cluster's name and a suffix): kept short
_MAX_GROUP_NAME = 48


def group_name(node: str) -> str:
    """``gw-<node>`` (dots as dashes); a long name is cut and given a hash of the whole."""
    name = GROUP_PREFIX + node.replace(".", "-")
    if len(name) <= _MAX_GROUP_NAME:
        return name
    digest = hashlib.sha256(node.encode()).hexdigest()[:8]
    return f"{name[: _MAX_GROUP_NAME - 9].rstrip('-')}-{digest}"


def worker_group(node: NodeResponse, *, image: str) -> dict[str, Any]:
    """The worker group of ``node``: one pod on it, holding all its GPUs."""
    per_vendor = Counter(gpu.vendor for gpu in node.gpus)
    limits = {_DEVICE_RESOURCE[vendor]: str(count) for vendor, count in sorted(per_vendor.items())}
    return {
        "groupName": group_name(node.name),
        "replicas": 1,
        "minReplicas": 1,
        "maxReplicas": 1,
        "rayStartParams": {},
        "resources": {"GPU": str(len(node.gpus))},
        "labels": {NODE_LABEL: node.name},
        "template": {
            "metadata": {"labels": {NODE_LABEL: node.name}},
            "spec": {
                "nodeSelector": {NODE_LABEL: node.name},
                "containers": [
                    {
                        "name": "ray-worker",
                        "image": image,
                        "env": [
                            # NVML's and CUDA's GPU indices agree (the inventory's numbering)
                            {"name": "CUDA_DEVICE_ORDER", "value": "PCI_BUS_ID"},
                            {"name": "GRIDWEAVE_NODE", "value": node.name},
                        ],
                        "resources": {"limits": limits, "requests": limits},
                    }
                ],
            },
        },
    }


def covers(stored: Any, wanted: Any) -> bool:
    """Whether ``stored`` has every field of ``wanted`` with its value (the apiserver adds
    defaults such as ``numOfHosts``; those are not a difference)."""
    if isinstance(wanted, dict):
        return isinstance(stored, dict) and all(
            key in stored and covers(stored[key], value) for key, value in wanted.items()
        )
    if isinstance(wanted, list):
        return (
            isinstance(stored, list)
            and len(stored) == len(wanted)
            and all(covers(s, w) for s, w in zip(stored, wanted, strict=True))
        )
    return bool(stored == wanted)


def desired_worker_groups(
    current: Sequence[dict[str, Any]], joined: Sequence[NodeResponse], *, image: str
) -> list[dict[str, Any]]:
    """The cluster's worker groups: others' as they are, then one per joined node by name.

    A node's group already there with every field we set is kept as stored, so an
    unchanged cluster compares equal and is not written.
    """
    others = [g for g in current if not str(g.get("groupName", "")).startswith(GROUP_PREFIX)]
    stored = {str(g.get("groupName")): g for g in current}
    ours = []
    for node in sorted(joined, key=lambda n: n.name):
        wanted = worker_group(node, image=image)
        existing = stored.get(wanted["groupName"])
        ours.append(existing if existing is not None and covers(existing, wanted) else wanted)
    return others + ours
