"""The gateway's side of mode vllm: when the cluster refuses it, how a replica starts vLLM."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from job_gateway.endpoints import EndpointSettings
from job_gateway.endpoints.replica import VllmLaunch
from job_gateway.endpoints.vllm_backend import vllm_command
from job_gateway.endpoints.vllm_config import vllm_launch, vllm_refusal
from job_gateway.inventory import Inventory
from job_gateway.inventory.static import InventoryFile
from tests.job_gateway.execution_factories import cluster_inventory

REAL = """
nodes:
  - name: gpu-a
    gpus:
      - {index: 0, vendor: nvidia, model: L4, vram_mb: 24576}
      - {index: 1, vendor: nvidia, model: A100, vram_mb: 81920}
"""


def inventory(text: str) -> Inventory:
    return InventoryFile.model_validate(yaml.safe_load(text)).to_inventory()


class TestRefusal:
    def test_no_real_gpu_is_refused_unless_the_cpu_build_is_allowed(self) -> None:
        simulated = cluster_inventory()
        off = EndpointSettings(vllm_python="/opt/vllm/bin/python")
        assert "real GPU" in str(vllm_refusal(off, simulated))
        on = EndpointSettings(vllm_python="/opt/vllm/bin/python", vllm_allow_cpu=True)
        assert vllm_refusal(on, simulated) is None

    def test_without_the_interpreter_it_is_refused_naming_the_setting(self) -> None:
        for settings, where in (
            (EndpointSettings(), inventory(REAL)),
            (EndpointSettings(vllm_allow_cpu=True), cluster_inventory()),
        ):
            assert "GATEWAY_VLLM_PYTHON" in str(vllm_refusal(settings, where))
        assert vllm_refusal(EndpointSettings(vllm_python="/v/python"), inventory(REAL)) is None

    def test_arguments_that_no_shell_could_split_are_refused_at_start(self) -> None:
        with pytest.raises(ValidationError, match="vllm_args"):
            EndpointSettings(vllm_args="--chat-template 'unclosed")


class TestLaunch:
    def test_the_endpoints_share_of_the_smallest_placed_gpu(self) -> None:
        settings = EndpointSettings(vllm_python="/v/python", vllm_args="--enforce-eager -tp 2")
        launch = vllm_launch(settings, inventory(REAL), node="gpu-a", indices=[0, 1], vram_mb=12288)
        assert launch == VllmLaunch(
            python="/v/python",
            args=("--enforce-eager", "-tp", "2"),
            gpu_memory_fraction=0.5,
            cpu_kv_cache_gib=6,
        )
        whole = vllm_launch(settings, inventory(REAL), node="gpu-a", indices=[1], vram_mb=81920)
        assert whole.gpu_memory_fraction == 0.95  # never all of it

    def test_simulated_gpus_leave_the_memory_to_the_cpu_build(self) -> None:
        settings = EndpointSettings(vllm_python="/v/python", vllm_allow_cpu=True)
        simulated = cluster_inventory()
        launch = vllm_launch(settings, simulated, node="node-a", indices=[0], vram_mb=1024)
        assert launch.gpu_memory_fraction is None and launch.cpu_kv_cache_gib == 1

    def test_the_command_serves_the_endpoints_model_on_loopback(self, tmp_path: Path) -> None:
        launch = VllmLaunch(python="/v/python", args=("--enforce-eager",), gpu_memory_fraction=0.25)
        command = vllm_command(launch, tmp_path, name="tiny", port=8123, chat_template=None)
        assert command[0] == "/v/python" and command[1].endswith("vllm_launcher.py")
        assert command[2:4] == ["--model", str(tmp_path)]
        flags = " ".join(command[4:])
        assert "--served-model-name tiny --host 127.0.0.1 --port 8123" in flags
        assert "--gpu-memory-utilization 0.2500" in flags and flags.endswith("--enforce-eager")
        assert "--chat-template" not in flags
