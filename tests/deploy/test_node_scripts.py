"""deploy/join-node.sh, node-heartbeat.sh and leave-node.sh --dry-run against a live
kuberay-service on loopback (real HTTP, real PostgreSQL): validate -> register -> heartbeat
-> leave, twice the same mesh address, refusals that say which, and nothing secret printed."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.scripts import run_script
from tests.kuberay_service.node_factories import (
    ADMIN,
    INTERNAL,
    K3S_TOKEN,
    Registry,
    create_key,
    serve_registry,
)
from tests.support.postgres import PostgresTestServer

GPUS = [
    {"index": 0, "vendor": "nvidia", "model": "NVIDIA A100 80GB", "vram_mb": 81_920},
    {"index": 1, "vendor": "nvidia", "model": "NVIDIA L4", "vram_mb": 23_034},
]

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def registry(postgres: PostgresTestServer) -> Iterator[Registry]:
    url = postgres.create_database("gwkuberay")
    try:
        with serve_registry(url) as served:
            yield served
    finally:
        postgres.drop_database(url)


def _outputs(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    return dict(
        line.split("=", 1) for line in done.stdout.splitlines() if line.startswith("GRIDWEAVE_")
    )


def _join(registry: Registry, key: str, state: Path, name: str) -> subprocess.CompletedProcess[str]:
    return run_script(
        "join-node.sh",
        "--dry-run",
        "--master",
        registry.url,
        "--join-key",
        key,
        "--hostname",
        name,
        "--state-dir",
        str(state),
        "--gpus",
        json.dumps(GPUS),
        "--label",
        "zone=lab-1",
    )


def _node(registry: Registry, name: str) -> dict[str, Any] | None:
    with registry.client(INTERNAL) as http:
        nodes = http.get("/v1/nodes").json()["nodes"]
    return next((node for node in nodes if node["name"] == name), None)


class TestJoinAndLeave:
    def test_join_twice_then_leave(self, registry: Registry, tmp_path: Path) -> None:
        key = create_key(registry, max_uses=1)
        state = tmp_path / "node"
        first = _join(registry, key["key"], state, "gpu-script-a")
        assert first.returncode == 0, first.stderr
        node = _node(registry, "gpu-script-a")
        assert node is not None
        assert (node["status"], node["labels"], node["vpn_ip"]) == (
            "Ready",
            {"zone": "lab-1"},
            _outputs(first)["GRIDWEAVE_VPN_IP"],
        )
        assert node["last_heartbeat_at"] > node["joined_at"]
        # every change to the machine printed, not made; no secret printed
        for action in (
            "would run: wg-quick up wg0",
            "would write /etc/wireguard/wg0.conf (mode 600):",
            "would write /etc/rancher/k3s/config.yaml (mode 600):",
            "would run: systemctl enable --now gridweave-heartbeat.service",
            f"node-ip: {node['vpn_ip']}",
            "PrivateKey = <redacted>",
            "token: <redacted>",
        ):
            assert action in first.stdout, action
        private_key = (state / "wg.key").read_text().strip()
        assert private_key not in first.stdout + first.stderr
        assert K3S_TOKEN not in first.stdout + first.stderr
        assert key["key"] not in first.stdout + first.stderr
        assert oct((state / "node.json").stat().st_mode & 0o777) == "0o600"

        again = _join(registry, key["key"], state, "gpu-script-a")  # the key has 1 use only
        assert again.returncode == 0, again.stderr
        assert _outputs(again)["GRIDWEAVE_VPN_IP"] == _outputs(first)["GRIDWEAVE_VPN_IP"]
        assert (state / "wg.key").read_text().strip() == private_key  # the pair is kept

        beat = run_script("node-heartbeat.sh", "--once", "--state-dir", str(state))
        assert beat.returncode == 0, beat.stderr

        bad_wait = run_script(
            "leave-node.sh", "--dry-run", "--wait", "soon", "--state-dir", str(state)
        )
        assert bad_wait.returncode == 1
        assert "--wait needs a number of seconds, not soon" in bad_wait.stderr
        assert _node(registry, "gpu-script-a") is not None  # nothing asked of the master

        left = run_script("leave-node.sh", "--dry-run", "--wait", "90", "--state-dir", str(state))
        assert left.returncode == 0, left.stderr
        assert _outputs(left) == {"GRIDWEAVE_LEFT": "gpu-script-a"}
        # the jobs move first, then the registration, the Ray worker and the tunnel go
        moved = left.stdout.index("would wait up to 90 s for the jobs and endpoint replicas")
        assert moved < left.stdout.index("would run: systemctl disable --now k3s-agent")
        assert "would run: wg-quick down wg0" in left.stdout
        assert _node(registry, "gpu-script-a") is None
        assert (state / "wg.key").exists() and not (state / "node.json").exists()

    def test_a_used_up_key_stops_the_script_saying_so(
        self, registry: Registry, tmp_path: Path
    ) -> None:
        key = create_key(registry, max_uses=1)
        assert _join(registry, key["key"], tmp_path / "a", "gpu-script-b").returncode == 0
        refused = _join(registry, key["key"], tmp_path / "c", "gpu-script-c")
        assert refused.returncode == 1
        assert "HTTP 403" in refused.stderr and "used up" in refused.stderr
        assert "would run: wg-quick" not in refused.stdout  # nothing done after a refusal
        with registry.client(ADMIN) as http:
            assert http.delete("/v1/nodes/gpu-script-b").status_code == 204

    def test_a_revoked_key_says_revoked(self, registry: Registry, tmp_path: Path) -> None:
        key = create_key(registry)
        with registry.client(ADMIN) as http:
            http.delete(f"/v1/nodes/join-keys/{key['id']}")
        refused = _join(registry, key["key"], tmp_path / "n", "gpu-script-d")
        assert refused.returncode == 1 and "revoked" in refused.stderr


# nvidia-smi as it answers the two queries the scripts make (csv, noheader, nounits)
FAKE_NVIDIA_SMI = """#!/bin/sh
case "$*" in
*index,name,memory.total*) printf '0, NVIDIA H200, 143771\\n1, NVIDIA L4, 23034\\n' ;;
*index,memory.free*) printf '0, 140000\\n1, [GPU requires reset]\\n' ;;
*) exit 9 ;;
esac
"""


class TestDetectedGpus:
    def test_nvidia_smi_gpus_and_their_health(self, registry: Registry, tmp_path: Path) -> None:
        tools = tmp_path / "bin"
        tools.mkdir()
        (tools / "nvidia-smi").write_text(FAKE_NVIDIA_SMI)
        (tools / "nvidia-smi").chmod(0o755)
        key = create_key(registry)
        args = ["--dry-run", "--master", registry.url, "--join-key", key["key"]]
        args += ["--hostname", "gpu-smi", "--state-dir", str(tmp_path / "state")]
        done = run_script("join-node.sh", *args, tools=tools)
        assert done.returncode == 0, done.stderr
        node = _node(registry, "gpu-smi")
        assert node is not None
        assert [(g["index"], g["model"], g["vram_mb"]) for g in node["gpus"]] == [
            (0, "NVIDIA H200", 143_771),
            (1, "NVIDIA L4", 23_034),
        ]
        # the first heartbeat: GPU 0 healthy with its free memory, GPU 1 not answering
        assert [(g["healthy"], g["free_vram_mb"]) for g in node["gpus"]] == [
            (True, 140_000),
            (False, 0),
        ]
        with registry.client(ADMIN) as http:
            assert http.delete("/v1/nodes/gpu-smi").status_code == 204

    def test_a_machine_with_both_vendors_joins_as_one_mixed_node(
        self, registry: Registry, tmp_path: Path
    ) -> None:
        tools = tmp_path / "bin"
        tools.mkdir()
        cards = {
            f"card{n}": {
                "Card Series": f"AMD Instinct MI300X #{n}",
                "VRAM Total Memory (B)": str(192 * 2**30),
            }
            for n in (10, 2)
        }
        for name, script in (
            ("nvidia-smi", FAKE_NVIDIA_SMI),
            ("rocm-smi", f"#!/bin/sh\nprintf '%s\\n' '{json.dumps(cards | {'system': {}})}'\n"),
        ):
            (tools / name).write_text(script)
            (tools / name).chmod(0o755)
        key = create_key(registry)
        args = ["--dry-run", "--master", registry.url, "--join-key", key["key"]]
        args += ["--hostname", "gpu-mixed", "--state-dir", str(tmp_path / "state")]
        done = run_script("join-node.sh", *args, tools=tools)
        assert done.returncode == 0, done.stderr
        node = _node(registry, "gpu-mixed")
        assert node is not None
        assert [(g["index"], g["vendor"], g["model"], g["vram_mb"]) for g in node["gpus"]] == [
            (0, "nvidia", "NVIDIA H200", 143_771),
            (1, "nvidia", "NVIDIA L4", 23_034),
            (2, "amd", "AMD Instinct MI300X #2", 196_608),  # AMD after NVIDIA, card2 first
            (3, "amd", "AMD Instinct MI300X #10", 196_608),
        ]
        assert "--build-arg GPU_PLATFORM=rocm" not in done.stdout  # pulled from the registry
        with registry.client(ADMIN) as http:
            assert http.delete("/v1/nodes/gpu-mixed").status_code == 204
