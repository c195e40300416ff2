"""The static inventory file: its documented format, and errors that name the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from job_gateway.inventory import (
    InventoryError,
    InventoryFileError,
    InventorySettings,
    StaticFileSource,
    load_inventory_file,
    open_inventory_source,
)

VALID_YAML = """
nodes:
  - name: gpu-b
    ready: false
    labels: {zone: lab-2}
    gpus:
      - {index: 0, vendor: amd, model: AMD Instinct MI300X, vram_mb: 196608}
  - name: gpu-a
    labels: {zone: lab-1}
    cpu_millis: 64000
    memory_mb: 262144
    gpus:
      - index: 0
        vendor: nvidia
        model: NVIDIA A100 80GB
        vram_mb: 81920
      - index: 1
        vendor: nvidia
        model: NVIDIA A100 80GB
        vram_mb: 81920
        cordoned: true
  - name: gpu-c
    cordoned: true
    gpus:
      - {index: 3, vendor: nvidia, model: Simulated, vram_mb: 1024, simulated: true}
"""


def _write(tmp_path: Path, text: str, name: str = "inventory.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


class TestFormat:
    def test_the_documented_yaml(self, tmp_path: Path) -> None:
        inventory = load_inventory_file(_write(tmp_path, VALID_YAML))
        b, a, c = inventory.nodes
        assert (a.name, a.ready, a.labels) == ("gpu-a", True, {"zone": "lab-1"})
        assert (a.cpu_millis, a.memory_mb) == (64_000, 262_144)
        assert (b.name, b.ready) == ("gpu-b", False)
        assert (b.cpu_millis, b.memory_mb) == (None, None)  # not declared: no limit
        assert [(g.index, g.schedulable) for g in a.gpus] == [(0, True), (1, False)]
        assert b.gpus[0].vendor == "amd" and b.gpus[0].vram_mb == 196_608
        assert c.gpus[0].simulated and c.gpus[0].cordoned  # the node's cordon covers its GPUs
        assert all(gpu.node == node.name for node in inventory.nodes for gpu in node.gpus)

    def test_json_is_the_same_inventory(self, tmp_path: Path) -> None:
        import yaml

        document = yaml.safe_load(VALID_YAML)
        from_json = load_inventory_file(_write(tmp_path, json.dumps(document), "inv.json"))
        assert from_json == load_inventory_file(_write(tmp_path, VALID_YAML))

    def test_an_edit_is_seen_at_the_next_read(self, tmp_path: Path) -> None:
        path = _write(tmp_path, VALID_YAML)
        source = StaticFileSource(path)
        assert len(source.read_inventory().nodes) == 3
        path.write_text("nodes: []\n")
        assert source.read_inventory().nodes == ()


def _error(tmp_path: Path, text: str, name: str = "inventory.yaml") -> InventoryFileError:
    with pytest.raises(InventoryFileError) as info:
        load_inventory_file(_write(tmp_path, text, name))
    return info.value


class TestErrorsNameTheField:
    @pytest.mark.parametrize(
        ("replace", "by", "field"),
        [
            ("vram_mb: 196608", "vram_mb: 0", "nodes[0].gpus[0].vram_mb"),
            ("vendor: amd", "vendor: intel", "nodes[0].gpus[0].vendor"),
            ("        model: NVIDIA A100 80GB\n", "", "nodes[1].gpus[0].model"),
            ("ready: false", "ready: perhaps", "nodes[0].ready"),
            ("index: 3", "index: -1", "nodes[2].gpus[0].index"),
            ("      - index: 1\n", "      - index: 0\n", "nodes[1].gpus"),
            ("name: gpu-c", "name: gpu-a", "nodes"),
            ("name: gpu-b", "name: 'gpu b'", "nodes[0].name"),
        ],
    )
    def test_field(self, tmp_path: Path, replace: str, by: str, field: str) -> None:
        assert replace in VALID_YAML
        error = _error(tmp_path, VALID_YAML.replace(replace, by, 1))
        assert error.field == field
        assert f": {field}: " in str(error) and "inventory.yaml" in str(error)

    def test_a_typo_names_both_the_unknown_and_the_missing_field(self, tmp_path: Path) -> None:
        error = _error(tmp_path, VALID_YAML.replace("vram_mb: 196608", "vram_gb: 192"))
        assert "nodes[0].gpus[0].vram_gb: Extra inputs are not permitted" in str(error)
        assert "nodes[0].gpus[0].vram_mb: Field required" in str(error)

    def test_an_empty_file(self, tmp_path: Path) -> None:
        assert _error(tmp_path, "").field == "(document)"

    def test_bad_yaml_names_the_line(self, tmp_path: Path) -> None:
        error = _error(tmp_path, "nodes:\n  - name: [unclosed\n")
        assert "not valid YAML" in str(error) and "line 3" in str(error)

    def test_bad_json_names_the_line(self, tmp_path: Path) -> None:
        error = _error(tmp_path, '{"nodes": [\n  {"name": }\n]}', "inv.json")
        assert "not valid JSON (line 2" in str(error)

    def test_an_unknown_format(self, tmp_path: Path) -> None:
        assert "unknown inventory format '.toml'" in str(_error(tmp_path, "x", "inv.toml"))

    def test_a_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(InventoryFileError, match="cannot be read"):
            StaticFileSource(tmp_path / "absent.yaml").read_inventory()


class TestChosenBySettings:
    def test_the_file_source(self, tmp_path: Path) -> None:
        path = _write(tmp_path, VALID_YAML)
        source = open_inventory_source(
            InventorySettings(inventory_source="file", inventory_file=path)
        )
        assert isinstance(source, StaticFileSource) and source.path == path

    def test_the_file_source_needs_a_file(self) -> None:
        with pytest.raises(InventoryError, match="GATEWAY_INVENTORY_FILE"):
            open_inventory_source(InventorySettings(inventory_source="file"))

    def test_the_registry_source_needs_a_client(self) -> None:
        with pytest.raises(InventoryError, match="registry client"):
            open_inventory_source(InventorySettings(inventory_source="registry"))
