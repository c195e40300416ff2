"""The scheduler, pure: decisions/s, Alibaba's production trace, a mixed trace, fair share.

Run from the repository root: ``.venv/bin/python -m bench.bench_scheduler`` (``--parts`` to
run some). What it measures is in ``DESCRIPTION``, which also heads its section of
``docs/benchmarks.md``; the figures are printed and written there with the machine and date.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench.report import machine_line, write_section
from bench.scheduler_cluster import AGING_S, GIB, cluster, filled, workload
from bench.scheduler_fairness import simulate
from bench.scheduler_mixed import FILLS, ratios
from bench.trace_alibaba import (
    TRACE_DIR,
    arrivals,
    best_fit,
    first_fit,
    first_fit_decreasing,
    load_trace,
    online,
)
from job_gateway.scheduler import Allocation, Decision, Policy

PARTS = ("speed", "trace", "mixed", "fairness")

DESCRIPTION = f"""\
Four parts, each comparing policies measured in the same run (the machine's 2 cores are
shared with other sessions' tests: compare within a table, not across runs). `fgd` is the
default policy (docs/architecture.md, "Resources, the fragmentation-aware policy and fair
share"); `binpack` the default before it.

1. **Decisions/s** at 10, 100 and 1,000 nodes (`bench/scheduler_cluster.py`: 8 GPUs of one
   model per node, 24-192 GiB, NVIDIA and AMD; requests of 1-8 GPUs, 1-80 GiB, nvidia/amd/
   any, 5% endpoints, priorities 0-2): the scheduler fills the allocation map to 80% of the
   VRAM with the mix; then a pass over 2,000 waiting requests of the mix (a tenth submitted
   more than `aging_s` = {AGING_S:.0f} s ago) is timed seven times with the last pass's
   reservations passed back, as the gateway does. A decision is one request answered.
   Timed as the process's CPU time (what another session's load does not inflate), wall
   time beside it. "with CPU and memory": nodes of 16 cores and 128 GiB per GPU, requests
   of 0.5-2 cores and 2-16 GiB per GPU they ask (several requests share a GPU's VRAM).
2. **Alibaba's production trace** (cluster-trace-gpu-v2023, the trace of Weng et al., "Beware
   of Fragmentation", USENIX ATC '23; `bench/trace_alibaba.py`) as its README says: 1,213
   nodes with their CPU, memory and GPU model, 6,212 GPUs of 1,000 units; pods drawn with
   replacement until the demand reaches 0.9 or 1.0 of the capacity, each placed on arrival
   (one pass each) or failed, with CPU, memory and `gpu_spec` in force (the file's
   `gpu_spec` is empty for every pod: no model constraint binds). Beside the scheduler's
   policies, on the same arrivals: first-fit, the paper's best-fit (least
   0.5 x CPU / 128 cores + 0.5 x GPU / 8 GPUs left) and offline first-fit-decreasing.
   Unallocated: the share of the GPU capacity free at the end; failed: the share of the
   demand that arrived and was not placed. Goal: `fgd` at load 1.0 leaves at least 25% less
   unallocated than best-fit.
3. **A mixed synthetic trace** (`bench/scheduler_mixed.py`): the cluster of part 1 (100
   nodes, a fifth of them with 4 GPUs), jobs of its mix arriving at random until the demand
   reaches a fill of 0.90 ... 0.99 of the VRAM, vendor-specific jobs asking NVIDIA or AMD in
   proportion to each vendor's VRAM; online (one pass per arrival) against offline
   first-fit-decreasing on the same jobs. Goal: mean >= 0.99, none below 0.98. Also the
   same with vendor-specific jobs half NVIDIA, half AMD, whatever the capacity.
4. **Fair share** (`bench/scheduler_fairness.py`): two users over a saturated simulated hour,
   one submitting ten times more than the other (the lighter alone would ask 75% of the
   VRAM): the share of the VRAM x time each held. Goal: each within 5% of its share."""


def _cpu_rate(count: int, run: Callable[[], object], repeats: int) -> tuple[float, float]:
    """(decisions/s by CPU time, by wall time): medians of ``repeats`` runs."""
    cpu, wall = [], []
    for _ in range(repeats):
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        run()
        cpu.append(time.process_time() - start_cpu)
        wall.append(time.perf_counter() - start_wall)
    return count / statistics.median(cpu), count / statistics.median(wall)


def decisions(
    nodes: int, repeats: int, queue_length: int, policies: Sequence[Policy], *, resources: bool
) -> list[dict[str, Any]]:
    """Decisions/s of one pass over ``queue_length`` waiting requests, per policy, on one
    filled cluster (the policies take turns on the same map and queue)."""
    rng = random.Random(nodes)
    scheduler = filled(cluster(rng, nodes, resources=resources), rng, 0.80, resources=resources)
    now = 10_000.0
    queue = [workload(rng, 10**7 + i, now, resources=resources) for i in range(queue_length)]
    single = queue[:200]

    def one_by_one() -> None:
        for request in single:
            scheduler.schedule([request], now=now)

    rows = []
    for policy in policies:
        scheduler.policy = policy
        last = [scheduler.schedule(queue, now=now)]

        def one_pass(last: list[Decision] = last) -> None:
            last[0] = scheduler.schedule(queue, now=now, reservations=last[0].reservations)

        cpu, wall = _cpu_rate(queue_length, one_pass, repeats)
        decision = last[0]
        one_cpu, _ = _cpu_rate(len(single), one_by_one, 1)
        rows.append(
            {
                "policy": policy,
                "nodes": nodes,
                "allocations": len(scheduler.allocations),
                "rate": scheduler.allocation_rate(),
                "cpu": cpu,
                "wall": wall,
                "placed": len(decision.placements),
                "waiting": len(decision.waiting),
                "reserved": len(decision.reservations),
                "impossible": len(decision.impossible),
                "one_by_one": one_cpu,
            }
        )
    allocation = next(iter(scheduler.allocations))
    moved = Allocation("job", "bench-event", allocation.node, allocation.gpu_indices, GIB)
    start = time.process_time()
    for _ in range(1000):
        scheduler.allocations.put(moved)
        scheduler.allocations.remove(moved.key)
    event_us = (time.process_time() - start) / 2000 * 1e6
    for row in rows:
        row["event_us"] = event_us
    return rows


def speed_part(repeats: int, queue: int) -> tuple[list[str], float, float]:
    """The decisions/s table; (fgd's and binpack's decisions/s at 1,000 nodes, VRAM only)."""
    lines = [
        "| mix | nodes x GPUs | policy | allocations held | VRAM held | decisions/s (CPU) "
        "| decisions/s (wall) | placed / waiting / reserved / impossible "
        "| one request a pass, /s (CPU) | informer event µs |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |",
    ]
    at_1000 = {}
    for resources in (False, True):
        for nodes in (10, 100, 1000):
            for row in decisions(nodes, repeats, queue, ("fgd", "binpack"), resources=resources):
                mix = "with CPU and memory" if resources else "VRAM only"
                lines.append(
                    f"| {mix} | {nodes} x 8 | {row['policy']} | {row['allocations']:,} "
                    f"| {row['rate']:.1%} | **{row['cpu']:,.0f}** | {row['wall']:,.0f} "
                    f"| {row['placed']} / {row['waiting']} / {row['reserved']} / "
                    f"{row['impossible']} | {row['one_by_one']:,.0f} | {row['event_us']:.1f} |"
                )
                print(lines[-1], flush=True)
                if nodes == 1000 and not resources:
                    at_1000[row["policy"]] = row["cpu"]
    return lines, at_1000["fgd"], at_1000["binpack"]


TRACE_POLICIES = ("fgd", "binpack", "first-fit", "best-fit", "offline FFD")


def trace_part(seeds: Sequence[int]) -> tuple[list[str], dict[tuple[str, float], list[float]]]:
    """The Alibaba table; unallocated shares per (policy, load), one per seed."""
    trace = load_trace(TRACE_DIR)
    capacity = trace.capacity
    unallocated: dict[tuple[str, float], list[float]] = {}
    failed: dict[tuple[str, float], list[float]] = {}
    for load in (0.9, 1.0):
        for seed in seeds:
            pods = arrivals(trace, load, seed)
            demand = sum(pod.demand for pod in pods)
            for name in TRACE_POLICIES:
                if name in ("fgd", "binpack"):
                    placed = online(trace, pods, name)  # type: ignore[arg-type]
                else:
                    run = {
                        "first-fit": first_fit,
                        "best-fit": best_fit,
                        "offline FFD": first_fit_decreasing,
                    }[name]
                    placed = run(trace, pods)
                unallocated.setdefault((name, load), []).append(1 - placed / capacity)
                failed.setdefault((name, load), []).append(1 - placed / demand)
                print(
                    f"trace load {load} seed {seed} {name}: unallocated "
                    f"{1 - placed / capacity:.4f}",
                    flush=True,
                )
    lines = [
        "| load | policy | unallocated GPU capacity, each seed | mean | failed demand, mean "
        "| unallocated vs best-fit |",
        "| ---: | --- | --- | ---: | ---: | ---: |",
    ]
    for load in (0.9, 1.0):
        best = statistics.mean(unallocated[("best-fit", load)])
        for name in TRACE_POLICIES:
            values = unallocated[(name, load)]
            mean = statistics.mean(values)
            each = ", ".join(f"{v:.2%}" for v in values)
            versus = f"{mean / best - 1:+.1%}" if best > 0 else "-"
            lines.append(
                f"| {load:.1f} | {name} | {each} | **{mean:.2%}** "
                f"| {statistics.mean(failed[(name, load)]):.2%} | {versus} |"
            )
    return lines, unallocated


def mixed_part() -> tuple[list[str], list[float], dict[str, list[float]]]:
    """The mixed-trace table; fgd's ratios, and the other variant's per policy."""
    policies: tuple[Policy, ...] = ("fgd", "binpack")
    main = ratios(policies)
    other = ratios(policies, by_capacity=False)
    lines = [
        "| fill | "
        + " | ".join(f"{p} / FFD" for p in policies)
        + " | "
        + " | ".join(f"{p} / FFD (vendors half each)" for p in policies)
        + " |",
        "| ---: |" + " ---: |" * (2 * len(policies)),
    ]
    for n, fill in enumerate(FILLS):
        cells = [f"{main[p][n]:.4f}" for p in policies] + [f"{other[p][n]:.4f}" for p in policies]
        lines.append(f"| {fill:.3f} | " + " | ".join(cells) + " |")
    cells = [f"{statistics.mean(main[p]):.4f} (lowest {min(main[p]):.4f})" for p in policies]
    cells += [f"{statistics.mean(other[p]):.4f} (lowest {min(other[p]):.4f})" for p in policies]
    lines.append("| mean | " + " | ".join(cells) + " |")
    return lines, main["fgd"], other


def fairness_part() -> tuple[list[str], dict[str, float]]:
    """The fair-share table; each user's distance from its share with equal weights."""
    runs = [
        ("equal shares", {}, True, {"light": 0.5, "heavy": 0.5}),
        ("light weighs 2", {"light": 2.0}, True, {"light": 2 / 3, "heavy": 1 / 3}),
        ("no fair share (one queue)", {}, False, {"light": 0.5, "heavy": 0.5}),
    ]
    lines = [
        "| run | light: share held (its share) | heavy: share held (its share) "
        "| off its share (light, heavy) | VRAM used | jobs placed (light, heavy) "
        "| submitted (light, heavy) |",
        "| --- | ---: | ---: | --- | ---: | --- | --- |",
    ]
    equal: dict[str, float] = {}
    for name, weights, fair, shares in runs:
        outcome = simulate(fair=fair, weights=weights)
        off = {u: outcome.fractions[u] / shares[u] - 1 for u in shares}
        if name == "equal shares":
            equal = off
        lines.append(
            f"| {name} | {outcome.fractions['light']:.1%} ({shares['light']:.1%}) "
            f"| {outcome.fractions['heavy']:.1%} ({shares['heavy']:.1%}) "
            f"| {off['light']:+.1%}, {off['heavy']:+.1%} | {outcome.utilization:.1%} "
            f"| {outcome.placed['light']:,}, {outcome.placed['heavy']:,} "
            f"| {outcome.submitted['light']:,}, {outcome.submitted['heavy']:,} |"
        )
        print(lines[-1], flush=True)
    return lines, equal


def main() -> None:
    """Run the parts, print them, and rewrite this benchmark's section of the docs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--queue", type=int, default=2000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--no-write", action="store_true", help="print only")
    arguments = parser.parse_args()

    blocks: list[str] = []
    summary: list[str] = []
    if "speed" in arguments.parts:
        lines, fgd, binpack = speed_part(arguments.repeats, arguments.queue)
        blocks.append("\n".join(lines))
        summary.append(
            f"Decisions/s at 1,000 nodes (VRAM only, CPU time): fgd {fgd:,.0f}, binpack "
            f"{binpack:,.0f} in the same run (goal >= 20,000: "
            f"{'met' if fgd >= 20_000 else 'not met'})."
        )
    if "trace" in arguments.parts:
        lines, unallocated = trace_part(arguments.seeds)
        blocks.append("\n".join(lines))
        fgd_mean = statistics.mean(unallocated[("fgd", 1.0)])
        best_mean = statistics.mean(unallocated[("best-fit", 1.0)])
        cut = 1 - fgd_mean / best_mean
        per_seed = ", ".join(
            f"{1 - f / b:.1%}"
            for f, b in zip(unallocated[("fgd", 1.0)], unallocated[("best-fit", 1.0)], strict=True)
        )
        summary.append(
            f"Alibaba trace, load 1.0: fgd leaves {fgd_mean:.2%} of the GPU capacity "
            f"unallocated, best-fit {best_mean:.2%}: {cut:.1%} less (each seed: {per_seed}; "
            f"goal >= 25%: {'met' if cut >= 0.25 else 'not met'} on the mean)."
        )
    if "mixed" in arguments.parts:
        lines, fgd_ratios, other = mixed_part()
        blocks.append("\n".join(lines))
        met = statistics.mean(fgd_ratios) >= 0.99 and min(fgd_ratios) >= 0.98
        summary.append(
            f"Mixed trace: fgd / offline FFD mean {statistics.mean(fgd_ratios):.4f}, lowest "
            f"{min(fgd_ratios):.4f} (goal mean >= 0.99, none below 0.98: "
            f"{'met' if met else 'not met'}); with vendors half each, lowest "
            f"{min(other['fgd']):.4f} (binpack {min(other['binpack']):.4f})."
        )
    if "fairness" in arguments.parts:
        lines, equal = fairness_part()
        blocks.append("\n".join(lines))
        worst = max(abs(v) for v in equal.values())
        summary.append(
            f"Fair share, equal weights: each user within {worst:.1%} of its share (goal "
            f"5%: {'met' if worst <= 0.05 else 'not met'})."
        )
    text = "\n\n".join(blocks + [" ".join(summary)])
    print(text)
    if not arguments.no_write:
        section = "\n\n".join(
            [
                "## Scheduler: decisions/s, Alibaba's trace, a mixed trace, fair share "
                "(`bench/bench_scheduler.py`)",
                f"{machine_line()} (2 cores shared with other sessions).",
                DESCRIPTION,
                text,
            ]
        )
        write_section("bench_scheduler", section)


if __name__ == "__main__":
    main()
