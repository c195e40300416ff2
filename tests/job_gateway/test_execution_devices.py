"""What a worker is shown (the GPU variables of its GPUs), and the outcome record's bounds."""

from __future__ import annotations

import pytest

from job_gateway.execution import Outcome, parse_outcome
from job_gateway.execution.devices import visible_devices
from job_gateway.execution.outcome import MAX_OUTCOME_BYTES
from job_gateway.inventory import Gpu, Inventory, Node


def mixed_node() -> Inventory:
    """One node with two NVIDIA GPUs (0, 1) and two AMD GPUs numbered after them (2, 3)."""
    nvidia = [Gpu(node="mixed", index=i, vendor="nvidia", model="A", vram_mb=1024) for i in (0, 1)]
    amd = [
        Gpu(node="mixed", index=i, vendor="amd", model="B", vram_mb=1024, device_index=i - 2)
        for i in (2, 3)
    ]
    return Inventory(nodes=(Node(name="mixed", gpus=(*nvidia, *amd)),))


class TestVisibleDevices:
    def test_nvidia_gpus_by_index_in_pci_order(self) -> None:
        assert visible_devices(mixed_node(), "mixed", [1], "any") == {
            "CUDA_VISIBLE_DEVICES": "1",
            "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        }

    def test_amd_gpus_by_hip_index_without_rocr(self) -> None:
        assert visible_devices(mixed_node(), "mixed", [2, 3], "any") == {
            "HIP_VISIBLE_DEVICES": "0,1"
        }

    @pytest.mark.parametrize(
        ("requested", "variable"), [("amd", "HIP_VISIBLE_DEVICES"), ("any", "CUDA_VISIBLE_DEVICES")]
    )
    def test_a_gpu_the_inventory_lost_falls_back_to_the_jobs_vendor(
        self, requested: str, variable: str
    ) -> None:
        shown = visible_devices(mixed_node(), "gone", [5], requested)  # type: ignore[arg-type]
        assert shown[variable] == "5"


class TestOutcomeRecord:
    def test_a_record_round_trips_as_json(self) -> None:
        record = Outcome(
            job_id="j",
            attempt=1,
            status="exception",
            wall_seconds=1.5,
            started_at=10.0,
            finished_at=11.5,
            exception_type="ValueError",
            message="ValueError: boom",
        )
        assert parse_outcome(record.model_dump_json().encode()) == record

    @pytest.mark.parametrize(
        "data",
        [
            b"\x80\x04K\x01.",  # a pickle is not read as one
            b'{"job_id": "j", "attempt": 0, "status": "maybe", "wall_seconds": 1,'
            b' "started_at": 0, "finished_at": 1}',
            b'{"job_id": "j", "attempt": 0, "status": "ok", "wall_seconds": -1,'
            b' "started_at": 0, "finished_at": 1}',
            b" " * (MAX_OUTCOME_BYTES + 1),
        ],
    )
    def test_anything_else_is_refused(self, data: bytes) -> None:
        with pytest.raises(ValueError):
            parse_outcome(data)
