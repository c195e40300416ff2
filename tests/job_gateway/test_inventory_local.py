"""The local machine's inventory: NVML, amdsmi and rocm-smi through small fakes; the fallback."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from job_gateway.inventory import (
    Gpu,
    InventorySettings,
    LocalMachineSource,
    open_inventory_source,
    simulated_gpu,
)
from job_gateway.inventory._amd import (
    ROCM_SMI_COMMAND,
    amd_gpus,
    amdsmi_gpus,
    parse_rocm_smi,
    run_rocm_smi,
)
from job_gateway.inventory._nvidia import load_nvml, nvidia_gpus
from job_gateway.inventory.local import machine_capacity

GIB = 2**30


class FakeNvmlError(Exception):
    """pynvml's NVMLError."""


@dataclass
class FakeMemory:
    total: int
    used: int


@dataclass
class FakeUtilization:
    gpu: int
    memory: int


@dataclass
class FakeNvml:
    """The part of pynvml the probe calls, over a list of (name, total bytes | None); each
    device has ``used_bytes`` in use (at most its total) and is ``busy_percent`` busy (None:
    NVML answers Not Supported)."""

    devices: list[tuple[str | bytes, int | None]] = field(default_factory=list)
    used_bytes: int = 0
    busy_percent: int | None = None
    fail_init: bool = False
    calls: list[str] = field(default_factory=list)
    NVMLError: type[Exception] = FakeNvmlError

    def nvmlInit(self) -> None:  # noqa: N802
        self.calls.append("init")
        if self.fail_init:
            raise FakeNvmlError("NVML Shared Library Not Found")

    def nvmlShutdown(self) -> None:  # noqa: N802
        self.calls.append("shutdown")

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:  # noqa: N802
        return index

    def nvmlDeviceGetName(self, handle: int) -> str | bytes:  # noqa: N802
        return self.devices[handle][0]

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> FakeMemory:  # noqa: N802
        total = self.devices[handle][1]
        if total is None:
            raise FakeNvmlError("GPU is lost")
        return FakeMemory(total, min(self.used_bytes, total))

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> FakeUtilization:  # noqa: N802
        if self.busy_percent is None:
            raise FakeNvmlError("Not Supported")
        return FakeUtilization(self.busy_percent, 0)


class FakeAmdSmiError(Exception):
    """amdsmi's AmdSmiException."""


class FakeMemoryType:
    VRAM = "vram"


@dataclass
class FakeAmdSmi:
    """The part of amdsmi the probe calls, over a list of (market name, bytes, hip id); each
    device has ``used_bytes`` in use and ``gfx_activity`` (None: not supported)."""

    devices: list[tuple[str, int, int | None]] = field(default_factory=list)
    used_bytes: int | None = None
    gfx_activity: int | str | None = None
    fail_init: bool = False
    shut_down: bool = False
    AmdSmiException: type[Exception] = FakeAmdSmiError
    AmdSmiMemoryType: Any = FakeMemoryType

    def amdsmi_init(self) -> None:
        if self.fail_init:
            raise FakeAmdSmiError("libamd_smi.so not found")

    def amdsmi_shut_down(self) -> None:
        self.shut_down = True

    def amdsmi_get_processor_handles(self) -> list[int]:
        return list(range(len(self.devices)))

    def amdsmi_get_gpu_asic_info(self, handle: int) -> dict[str, Any]:
        return {"market_name": self.devices[handle][0], "vendor_id": 0x1002}

    def amdsmi_get_gpu_memory_total(self, handle: int, mem_type: Any) -> int:
        assert mem_type == "vram"
        return self.devices[handle][1]

    def amdsmi_get_gpu_enumeration_info(self, handle: int) -> dict[str, Any]:
        hip_id = self.devices[handle][2]
        if hip_id is None:
            raise FakeAmdSmiError("not supported")
        return {"hip_id": hip_id, "drm_card": handle}

    def amdsmi_get_gpu_memory_usage(self, handle: int, mem_type: Any) -> int:
        assert mem_type == "vram"
        if self.used_bytes is None:
            raise FakeAmdSmiError("not supported")
        return self.used_bytes

    def amdsmi_get_gpu_activity(self, handle: int) -> dict[str, Any]:
        if self.gfx_activity is None:
            raise FakeAmdSmiError("not supported")
        return {"gfx_activity": self.gfx_activity, "umc_activity": 0, "mm_activity": "N/A"}


ROCM_SMI_JSON = json.dumps(
    {
        "card1": {
            "Card Series": "AMD Instinct MI300X",
            "Card model": "0x74a1",
            "VRAM Total Memory (B)": str(192 * GIB),
            "VRAM Total Used Memory (B)": "296837120",
        },
        "card0": {
            "Card series": "AMD Instinct MI250X",
            "VRAM Total Memory (B)": str(64 * GIB),
            "VRAM Total Used Memory (B)": "11476992",
        },
        "card2": {"Card series": "broken", "VRAM Total Memory (B)": "N/A"},
        "system": {"Driver version": "6.8.5"},
    }
)


class TestNvidia:
    def test_every_gpu_with_its_index_model_and_mib(self) -> None:
        nvml = FakeNvml(
            [("NVIDIA H100 80GB HBM3", 80 * GIB), (b"NVIDIA A100-SXM4-40GB", 40 * GIB)],
            used_bytes=GIB + 512 * 2**20,
        )
        gpus = nvidia_gpus(nvml, "box")
        assert gpus == [
            Gpu(
                node="box",
                index=0,
                vendor="nvidia",
                model="NVIDIA H100 80GB HBM3",
                vram_mb=81_920,
                used_mb=1536,  # measured by NVML when read
            ),
            Gpu(
                node="box",
                index=1,
                vendor="nvidia",
                model="NVIDIA A100-SXM4-40GB",
                vram_mb=40_960,
                used_mb=1536,
            ),
        ]
        assert nvml.calls == ["init", "shutdown"]

    def test_how_busy_each_gpu_was_is_read_where_nvml_has_it(self) -> None:
        busy = nvidia_gpus(FakeNvml([("NVIDIA L4", 24 * GIB)], busy_percent=37), "box")
        assert [gpu.utilization_percent for gpu in busy] == [37.0]
        unsupported = nvidia_gpus(FakeNvml([("NVIDIA L4", 24 * GIB)]), "box")
        assert [gpu.utilization_percent for gpu in unsupported] == [None]  # the GPU is kept

    def test_no_driver_finds_nothing(self) -> None:
        assert nvidia_gpus(FakeNvml([("x", GIB)], fail_init=True), "box") == []

    def test_a_lost_gpu_does_not_hide_the_others(self) -> None:
        nvml = FakeNvml([("lost", None), ("NVIDIA L4", 24 * GIB)])
        gpus = nvidia_gpus(nvml, "box")
        assert [(gpu.index, gpu.model) for gpu in gpus] == [(1, "NVIDIA L4")]
        assert nvml.calls[-1] == "shutdown"

    def test_a_gpu_without_vram_is_skipped(self) -> None:
        assert nvidia_gpus(FakeNvml([("odd", 1024)]), "box") == []

    def test_the_real_pynvml_on_a_machine_without_a_driver(self) -> None:
        nvml = load_nvml()
        if nvml is None:
            pytest.skip("nvidia-ml-py is not installed")
        assert isinstance(nvidia_gpus(nvml, "box"), list)  # no exception, whatever the machine


class TestAmd:
    def test_amdsmi_gpus_use_hip_ids(self) -> None:
        smi = FakeAmdSmi(
            [("AMD Instinct MI300X", 192 * GIB, 1), ("AMD Instinct MI250X", 64 * GIB, 0)]
        )
        gpus = amdsmi_gpus(smi, "box")
        assert [(g.index, g.model, g.vram_mb, g.vendor) for g in gpus] == [
            (1, "AMD Instinct MI300X", 196_608, "amd"),
            (0, "AMD Instinct MI250X", 65_536, "amd"),
        ]
        assert smi.shut_down

    def test_amdsmi_measures_vram_in_use_and_activity_where_it_can(self) -> None:
        measured = FakeAmdSmi([("MI300X", 192 * GIB, 0)], used_bytes=3 * GIB, gfx_activity=64)
        assert [(g.used_mb, g.utilization_percent) for g in amdsmi_gpus(measured, "box")] == [
            (3072, 64.0)
        ]
        unmeasured = FakeAmdSmi([("MI300X", 192 * GIB, 0)], gfx_activity="N/A")
        assert [(g.used_mb, g.utilization_percent) for g in amdsmi_gpus(unmeasured, "box")] == [
            (None, None)
        ]

    def test_amdsmi_without_enumeration_numbers_in_order(self) -> None:
        gpus = amdsmi_gpus(FakeAmdSmi([("", 16 * GIB, None), ("", 16 * GIB, None)]), "box")
        assert [(g.index, g.model) for g in gpus] == [(0, "AMD GPU"), (1, "AMD GPU")]

    def test_amdsmi_that_cannot_start_finds_nothing(self) -> None:
        assert amdsmi_gpus(FakeAmdSmi([("x", GIB, 0)], fail_init=True), "box") == []

    def test_rocm_smi_json(self) -> None:
        gpus = parse_rocm_smi(ROCM_SMI_JSON, "box")
        assert [(g.index, g.model, g.vram_mb) for g in gpus] == [
            (0, "AMD Instinct MI250X", 65_536),
            (1, "AMD Instinct MI300X", 196_608),
        ]

    @pytest.mark.parametrize("output", ["", "WARNING: no devices", "[1, 2]", '{"card0": 3}'])
    def test_rocm_smi_without_usable_json_finds_nothing(self, output: str) -> None:
        assert parse_rocm_smi(output, "box") == []

    def test_rocm_smi_when_amdsmi_finds_nothing(self) -> None:
        gpus = amd_gpus("box", amdsmi=FakeAmdSmi([]), rocm_smi=lambda: ROCM_SMI_JSON)
        assert len(gpus) == 2

    def test_amdsmi_first(self) -> None:
        smi = FakeAmdSmi([("AMD Radeon PRO W7900", 48 * GIB, 0)])
        gpus = amd_gpus("box", amdsmi=smi, rocm_smi=lambda: ROCM_SMI_JSON)
        assert [g.model for g in gpus] == ["AMD Radeon PRO W7900"]


class TestLocalMachine:
    def test_the_node_has_this_machines_cpu_and_memory(self) -> None:
        source = LocalMachineSource("box", nvml=None, amdsmi=None, rocm_smi=None)
        (node,) = source.read_inventory().nodes
        cpu, memory = machine_capacity()
        assert (node.cpu_millis, node.memory_mb) == (cpu, memory)
        assert cpu is not None and cpu >= 1000 and cpu % 1000 == 0
        assert memory is not None and memory > 256  # MiB of a machine that runs these tests
        given = LocalMachineSource("box", nvml=None, amdsmi=None, rocm_smi=None, capacity=(500, 64))
        assert given.read_inventory().nodes[0].cpu_millis == 500

    def test_no_gpu_gives_one_simulated_gpu_of_the_configured_size(self) -> None:
        source = LocalMachineSource(
            "box", nvml=FakeNvml(fail_init=True), amdsmi=None, rocm_smi=None, simulated_vram_mb=8192
        )
        inventory = source.read_inventory()
        (node,) = inventory.nodes
        assert node.name == "box" and node.ready
        assert node.gpus == (simulated_gpu("box", 8192),)
        assert node.gpus[0].simulated and inventory.simulated
        assert "[simulated]" in str(node.gpus[0])
        assert node.gpus[0].model_dump()["simulated"] is True
        assert node.gpus[0].used_mb is None  # nothing measures a simulated GPU

    def test_real_gpus_are_not_simulated(self) -> None:
        source = LocalMachineSource(
            "box", nvml=FakeNvml([("NVIDIA L4", 24 * GIB)]), amdsmi=None, rocm_smi=None
        )
        inventory = source.read_inventory()
        assert not inventory.simulated
        assert [g.model for g in inventory.gpus()] == ["NVIDIA L4"]

    def test_both_vendors_get_unique_indices_and_keep_hips(self) -> None:
        source = LocalMachineSource(
            "box",
            nvml=FakeNvml([("NVIDIA L4", 24 * GIB), ("NVIDIA L4", 24 * GIB)], used_bytes=GIB),
            amdsmi=None,
            rocm_smi=lambda: ROCM_SMI_JSON,
        )
        gpus = list(source.read_inventory().gpus())
        assert [(g.index, g.vendor, g.visible_index, g.used_mb) for g in gpus] == [
            (0, "nvidia", 0, 1024),
            (1, "nvidia", 1, 1024),
            (2, "amd", 0, None),  # AMD's use is not measured: shown as such, never guessed
            (3, "amd", 1, None),
        ]

    def test_the_settings_size_the_simulated_gpu(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("GATEWAY_SIMULATED_GPU_VRAM_MB", "12288")
        monkeypatch.setenv("GATEWAY_SIMULATED_GPU_VENDOR", "amd")
        monkeypatch.setenv("GATEWAY_NODE_NAME", "laptop")
        settings = InventorySettings()
        source = LocalMachineSource(
            settings.node_name,
            nvml=None,
            amdsmi=None,
            rocm_smi=None,
            simulated_vram_mb=settings.simulated_gpu_vram_mb,
            simulated_vendor=settings.simulated_gpu_vendor,
        )
        (gpu,) = source.read_inventory().gpus()
        assert (gpu.node, gpu.vendor, gpu.vram_mb, gpu.simulated) == ("laptop", "amd", 12288, True)

    def test_this_machine(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The guarded imports on the test machine: whatever it has, an inventory comes back."""
        monkeypatch.setenv("GATEWAY_SIMULATED_GPU_VRAM_MB", "4096")
        source = open_inventory_source(InventorySettings())
        assert isinstance(source, LocalMachineSource)
        gpus = list(source.read_inventory().gpus())
        assert gpus
        if not source.find_gpus():
            assert [(g.simulated, g.vram_mb) for g in gpus] == [(True, 4096)]

    def test_a_bad_setting_is_refused(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("GATEWAY_SIMULATED_GPU_VRAM_MB", "0")
        with pytest.raises(ValueError, match="simulated_gpu_vram_mb"):
            InventorySettings()


class TestRocmSmiCommand:
    def _install(self, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
        binary = tmp_path / "rocm-smi"
        binary.write_text("#!/bin/sh\n" + script)
        binary.chmod(0o755)
        monkeypatch.setenv("PATH", f"{tmp_path}")

    def test_runs_the_command_and_reads_its_json(
        self, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        (tmp_path / "out.json").write_text(ROCM_SMI_JSON)
        self._install(
            tmp_path,
            monkeypatch,
            f'[ "$*" = "{" ".join(ROCM_SMI_COMMAND[1:])}" ] || exit 2\n'
            f"exec /bin/cat {tmp_path}/out.json\n",
        )
        output = run_rocm_smi()
        assert output is not None and len(parse_rocm_smi(output, "box")) == 2

    def test_a_failing_command_gives_nothing(
        self, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        self._install(tmp_path, monkeypatch, "echo 'ERROR: driver not loaded' >&2\nexit 1\n")
        assert run_rocm_smi() is None

    def test_no_command_gives_nothing(self, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("PATH", str(tmp_path))
        assert run_rocm_smi() is None
