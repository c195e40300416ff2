"""Alibaba's GPU-sharing production trace (cluster-trace-gpu-v2023) as the scheduler sees it.

The trace of "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation
Gradient Descent" (Weng, Yang et al., USENIX ATC '23), read as its README in
``../shared/traces/alibaba-gpu-v2023/`` says: every GPU is 1,000 units of VRAM; a pod with
one GPU asks ``gpu_milli`` units of it, a pod with more asks whole GPUs on one node; pods
without GPUs are left out; vendor "any"; ``gpu_spec`` (allowed models, ``|``-separated) as
the request's ``gpu_models``. Arrivals are drawn at random with replacement (seeded) until
the demand reaches a load; each is placed on arrival or fails.

Besides the scheduler's policies, the baselines of the paper run on the same arrivals in a
plain simulation of the same cluster (same CPU, memory and model rules):

- first-fit: the first node by name with room, its lowest-index GPUs that fit;
- best-fit: the node left with the least of 0.5 x CPU / 128 cores + 0.5 x GPU / 8 GPUs
  (the paper's simulator's weights and scales), its tightest GPUs;
- offline first-fit-decreasing: every arrival known in advance, the largest GPU demand first
  (then the most CPU), each placed first-fit.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from job_gateway.inventory import Gpu, Inventory, Node
from job_gateway.scheduler import PlacementRequest, Policy, Scheduler, model_matches
from tests.support.kubeapi import REPO_ROOT

__all__ = [
    "TRACE_DIR",
    "Pod",
    "Trace",
    "arrivals",
    "best_fit",
    "first_fit",
    "first_fit_decreasing",
    "load_trace",
    "online",
]

TRACE_DIR = REPO_ROOT.parent / "shared" / "traces" / "alibaba-gpu-v2023"
UNIT = 1000  # VRAM units of one GPU
#: The paper's best-fit scales CPU and GPU by the largest node's: 128 cores, 8 GPUs.
_MAX_CPU, _MAX_GPU = 128_000, 8 * UNIT


@dataclass(frozen=True, slots=True)
class Pod:
    """One pod of the trace, as a request asks it."""

    gpus: int
    vram: int  # per GPU
    cpu: int
    memory: int
    models: tuple[str, ...]

    @property
    def demand(self) -> int:
        """GPU units it asks in all."""
        return self.gpus * self.vram


@dataclass(frozen=True, slots=True)
class Trace:
    """The cluster and the pods that ask GPUs."""

    inventory: Inventory
    pods: tuple[Pod, ...]

    @property
    def capacity(self) -> int:
        """GPU units of the cluster."""
        return sum(gpu.vram_mb for gpu in self.inventory.gpus())


def load_trace(directory: Path = TRACE_DIR) -> Trace:
    """The trace's nodes and GPU pods."""
    nodes = []
    with (directory / "openb_node_list_gpu_node.csv").open() as f:
        for row in csv.DictReader(f):
            name = row["sn"]
            gpus = tuple(
                Gpu(node=name, index=i, vendor="nvidia", model=row["model"], vram_mb=UNIT)
                for i in range(int(row["gpu"]))
            )
            nodes.append(
                Node(
                    name=name,
                    gpus=gpus,
                    cpu_millis=int(row["cpu_milli"]),
                    memory_mb=int(row["memory_mib"]),
                )
            )
    pods = []
    with (directory / "openb_pod_list_default.csv").open() as f:
        for row in csv.DictReader(f):
            count = int(row["num_gpu"])
            if count == 0:
                continue
            models = tuple(m for m in row["gpu_spec"].split("|") if m)
            vram = int(row["gpu_milli"]) if count == 1 else UNIT
            pods.append(Pod(count, vram, int(row["cpu_milli"]), int(row["memory_mib"]), models))
    return Trace(Inventory(nodes=tuple(nodes)), tuple(pods))


def arrivals(trace: Trace, load: float, seed: int) -> list[Pod]:
    """Pods drawn with replacement until the demand reaches ``load`` x capacity."""
    rng = random.Random(seed)
    drawn: list[Pod] = []
    demand = 0
    while demand < load * trace.capacity:
        pod = rng.choice(trace.pods)
        drawn.append(pod)
        demand += pod.demand
    return drawn


def online(trace: Trace, pods: Sequence[Pod], policy: Policy) -> int:
    """GPU units the scheduler places, one pass per arrival, in arrival order."""
    scheduler = Scheduler(trace.inventory, policy=policy)
    placed = 0
    for i, pod in enumerate(pods):
        request = PlacementRequest(
            f"pod-{i:06d}",
            pod.vram,
            pod.gpus,
            submitted_at=float(i),
            cpu_millis=pod.cpu,
            memory_mb=pod.memory,
            gpu_models=pod.models,
        )
        decision = scheduler.schedule([request], now=float(i))
        for placement in decision.placements:
            scheduler.allocations.put(placement.allocation(provisional=False))
            placed += pod.demand
    scheduler.close()
    return placed


class _Cluster:
    """The plain simulation the baselines run on."""

    def __init__(self, inventory: Inventory) -> None:
        nodes = sorted(inventory.nodes, key=lambda node: node.name)
        self.models = [node.gpus[0].model if node.gpus else "" for node in nodes]
        self.free = [[gpu.vram_mb for gpu in node.gpus] for node in nodes]
        self.cpu = [node.cpu_millis or 0 for node in nodes]
        self.memory = [node.memory_mb or 0 for node in nodes]

    def gpus_for(self, n: int, pod: Pod, *, tight: bool) -> list[int] | None:
        """The GPUs of node ``n`` the pod would take, or None where it does not fit."""
        if self.cpu[n] < pod.cpu or self.memory[n] < pod.memory:
            return None
        if pod.models and not any(model_matches(m, self.models[n]) for m in pod.models):
            return None
        frees = self.free[n]
        fits = [i for i, f in enumerate(frees) if f >= pod.vram]
        if len(fits) < pod.gpus:
            return None
        if tight:
            fits.sort(key=lambda i: (frees[i], i))
        return fits[: pod.gpus]

    def place(self, n: int, gpus: list[int], pod: Pod) -> None:
        for i in gpus:
            self.free[n][i] -= pod.vram
        self.cpu[n] -= pod.cpu
        self.memory[n] -= pod.memory


def _run(
    trace: Trace, pods: Sequence[Pod], pick: Callable[[_Cluster, Pod], tuple[int, list[int]] | None]
) -> int:
    cluster = _Cluster(trace.inventory)
    placed = 0
    for pod in pods:
        chosen = pick(cluster, pod)
        if chosen is not None:
            cluster.place(chosen[0], chosen[1], pod)
            placed += pod.demand
    return placed


def _first(cluster: _Cluster, pod: Pod) -> tuple[int, list[int]] | None:
    for n in range(len(cluster.free)):
        gpus = cluster.gpus_for(n, pod, tight=False)
        if gpus is not None:
            return n, gpus
    return None


def _best(cluster: _Cluster, pod: Pod) -> tuple[int, list[int]] | None:
    best: tuple[float, int, list[int]] | None = None
    for n in range(len(cluster.free)):
        gpus = cluster.gpus_for(n, pod, tight=True)
        if gpus is None:
            continue
        left = 0.5 * (cluster.cpu[n] - pod.cpu) / _MAX_CPU
        left += 0.5 * (sum(cluster.free[n]) - pod.demand) / _MAX_GPU
        if best is None or left < best[0]:
            best = (left, n, gpus)
    return None if best is None else (best[1], best[2])


def first_fit(trace: Trace, pods: Sequence[Pod]) -> int:
    """GPU units first-fit places, online."""
    return _run(trace, pods, _first)


def best_fit(trace: Trace, pods: Sequence[Pod]) -> int:
    """GPU units the paper's best-fit places, online."""
    return _run(trace, pods, _best)


def first_fit_decreasing(trace: Trace, pods: Sequence[Pod]) -> int:
    """GPU units offline first-fit-decreasing places (largest demand first)."""
    ordered = sorted(pods, key=lambda pod: (-pod.demand, -pod.cpu, -pod.memory))
    return _run(trace, ordered, _first)
