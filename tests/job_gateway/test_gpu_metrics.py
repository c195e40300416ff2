"""The GPUs' series on a registry: measured figures, a simulated GPU's from its held VRAM,
nothing guessed for an unmeasured one, and a GPU that left taking its series along."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from job_gateway.gpu_metrics import GpuGauges
from job_gateway.inventory import Gpu, Inventory, Node, simulated_gpu

MIB = 2**20


def _inventory(*gpus: Gpu) -> Inventory:
    nodes: dict[str, list[Gpu]] = {}
    for gpu in gpus:
        nodes.setdefault(gpu.node, []).append(gpu)
    return Inventory(nodes=tuple(Node(name=n, gpus=tuple(g)) for n, g in nodes.items()))


def _sample(registry: CollectorRegistry, name: str, node: str, gpu: str) -> float | None:
    """The value of ``name`` for that node and GPU (whatever its other labels); None: absent."""
    values = [
        sample.value
        for family in registry.collect()
        for sample in family.samples
        if sample.name == name and (sample.labels["node"], sample.labels["gpu"]) == (node, gpu)
    ]
    return values[0] if values else None


MEASURED = Gpu(
    node="box",
    index=0,
    vendor="nvidia",
    model="NVIDIA L4",
    vram_mb=24_576,
    used_mb=3_000,
    utilization_percent=45,
)
DECLARED = Gpu(node="box", index=1, vendor="amd", model="AMD Instinct MI250", vram_mb=65_536)
SIMULATED = simulated_gpu("sim", 16_384)


class TestGpuGauges:
    def test_measured_simulated_and_unmeasured_gpus(self) -> None:
        registry = CollectorRegistry()
        gauges = GpuGauges(registry)
        held = {("box", 0): 8_000, ("box", 1): 1_000, ("sim", 0): 4_096}
        gauges.update(_inventory(MEASURED, DECLARED, SIMULATED), lambda n, i: held[(n, i)])

        def value(name: str, node: str, gpu: str) -> float | None:
            return _sample(registry, f"gridweave_gpu_{name}", node, gpu)

        # measured: NVML's own figures, whatever the scheduler holds
        assert value("memory_total_bytes", "box", "0") == 24_576 * MIB
        assert value("memory_held_bytes", "box", "0") == 8_000 * MIB
        assert value("memory_used_bytes", "box", "0") == 3_000 * MIB
        assert value("utilization_ratio", "box", "0") == 0.45
        # declared and unmeasured: held and total, nothing guessed
        assert value("memory_held_bytes", "box", "1") == 1_000 * MIB
        assert value("memory_used_bytes", "box", "1") is None
        assert value("utilization_ratio", "box", "1") is None
        # simulated: its held VRAM is its use, its held share its utilization, marked so
        assert value("memory_used_bytes", "sim", "0") == 4_096 * MIB
        assert value("utilization_ratio", "sim", "0") == 0.25
        assert (
            registry.get_sample_value(
                "gridweave_gpu_utilization_ratio",
                {
                    "node": "sim",
                    "gpu": "0",
                    "vendor": "nvidia",
                    "model": "Simulated GPU",
                    "simulated": "true",
                },
            )
            == 0.25
        )

    def test_a_gpu_that_left_the_inventory_leaves_its_series(self) -> None:
        registry = CollectorRegistry()
        gauges = GpuGauges(registry)
        gauges.update(_inventory(MEASURED, SIMULATED), lambda n, i: 0)
        gauges.update(_inventory(SIMULATED), lambda n, i: 0)
        for name in ("memory_total_bytes", "memory_used_bytes", "utilization_ratio"):
            assert _sample(registry, f"gridweave_gpu_{name}", "box", "0") is None
            assert _sample(registry, f"gridweave_gpu_{name}", "sim", "0") is not None
