"""A static file as an inventory: YAML (``.yaml``, ``.yml``) or JSON (``.json``).

The format (unknown keys are refused, so a typo is named rather than ignored)::

    nodes:
      - name: gpu-a                 # required, unique
        ready: true                 # default true; false = NotReady, nothing placed there
        cordoned: false             # default false; true cordons every GPU of the node
        labels: {zone: lab-1}       # default {}
        cpu_millis: 64000           # default none: CPU the work placed here may use, in
        memory_mb: 262144           #   thousandths of a core, and memory, MiB (none: no limit)
        gpus:
          - index: 0                # required, unique on the node (CUDA/HIP index)
            vendor: nvidia          # required: nvidia | amd
            model: NVIDIA A100 80GB # required
            vram_mb: 81920          # required: total VRAM, MiB
            cordoned: false         # default false
            simulated: false        # default false; true marks a declared stand-in

The file is read again on every :meth:`StaticFileSource.read_inventory`, so an edit takes
effect at the next read. Any error raises :class:`InventoryFileError` naming the file and
each field at fault (``nodes[1].gpus[0].vram_mb: Field required``); ``field`` is the first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gridweave_controller.vendors import GpuVendor
from job_gateway.inventory.errors import InventoryFileError
from job_gateway.inventory.models import (
    MAX_CPU_MILLIS,
    MAX_GPUS_PER_NODE,
    MAX_MEMORY_MB,
    MAX_VRAM_MB,
    Gpu,
    Inventory,
    Node,
)
from job_gateway.inventory.models import NodeName as _NodeName

__all__ = ["GpuEntry", "InventoryFile", "NodeEntry", "StaticFileSource", "load_inventory_file"]


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GpuEntry(_Entry):
    """One GPU in the file."""

    index: Annotated[int, Field(ge=0, lt=MAX_GPUS_PER_NODE)]
    vendor: GpuVendor
    model: Annotated[str, Field(min_length=1, max_length=200)]
    vram_mb: Annotated[int, Field(ge=1, le=MAX_VRAM_MB)]
    cordoned: bool = False
    simulated: bool = False


class NodeEntry(_Entry):
    """One node in the file."""

    name: _NodeName
    ready: bool = True
    cordoned: bool = False
    labels: dict[str, str] = Field(default_factory=dict)
    cpu_millis: Annotated[int, Field(ge=1, le=MAX_CPU_MILLIS)] | None = None
    memory_mb: Annotated[int, Field(ge=1, le=MAX_MEMORY_MB)] | None = None
    gpus: Annotated[list[GpuEntry], Field(max_length=MAX_GPUS_PER_NODE)] = Field(
        default_factory=list
    )

    @field_validator("gpus")
    @classmethod
    def _indices_unique(cls, gpus: list[GpuEntry]) -> list[GpuEntry]:
        seen: set[int] = set()
        for gpu in gpus:
            if gpu.index in seen:
                raise ValueError(f"GPU index {gpu.index} appears twice")
            seen.add(gpu.index)
        return gpus


class InventoryFile(_Entry):
    """The whole file."""

    nodes: list[NodeEntry]

    @field_validator("nodes")
    @classmethod
    def _names_unique(cls, nodes: list[NodeEntry]) -> list[NodeEntry]:
        seen: set[str] = set()
        for node in nodes:
            if node.name in seen:
                raise ValueError(f"node name {node.name!r} appears twice")
            seen.add(node.name)
        return nodes

    def to_inventory(self) -> Inventory:
        """The inventory the file declares."""
        return Inventory(
            nodes=tuple(
                Node(
                    name=node.name,
                    ready=node.ready,
                    labels=node.labels,
                    cpu_millis=node.cpu_millis,
                    memory_mb=node.memory_mb,
                    gpus=tuple(
                        Gpu(
                            node=node.name,
                            index=gpu.index,
                            vendor=gpu.vendor,
                            model=gpu.model,
                            vram_mb=gpu.vram_mb,
                            schedulable=not (node.cordoned or gpu.cordoned),
                            simulated=gpu.simulated,
                        )
                        for gpu in node.gpus
                    ),
                )
                for node in self.nodes
            )
        )


_SHOWN_ERRORS = 5


def _field_path(location: tuple[int | str, ...]) -> str:
    path = ""
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "(document)"


def _parse(path: Path, text: str) -> Any:
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise InventoryFileError(
                f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}",
                path=str(path),
            ) from None
    if path.suffix.lower() in {".yaml", ".yml"}:
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
            problem = getattr(exc, "problem", None) or str(exc)
            raise InventoryFileError(
                f"{path}: not valid YAML{where}: {problem}", path=str(path)
            ) from None
    raise InventoryFileError(
        f"{path}: unknown inventory format {path.suffix!r} (use .yaml, .yml or .json)",
        path=str(path),
    )


def load_inventory_file(path: str | Path) -> Inventory:
    """The inventory in ``path``; raises :class:`InventoryFileError` naming what is wrong."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InventoryFileError(f"{path}: cannot be read: {exc}", path=str(path)) from None
    document = _parse(path, text)
    try:
        return InventoryFile.model_validate(document).to_inventory()
    except ValidationError as exc:
        errors = [(_field_path(tuple(e["loc"])), e["msg"]) for e in exc.errors(include_url=False)]
        shown = "; ".join(f"{field}: {message}" for field, message in errors[:_SHOWN_ERRORS])
        more = f" (and {len(errors) - _SHOWN_ERRORS} more)" if len(errors) > _SHOWN_ERRORS else ""
        raise InventoryFileError(
            f"{path}: {shown}{more}", path=str(path), field=errors[0][0]
        ) from None


class StaticFileSource:
    """The nodes and GPUs a static file declares, read again at every call."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def read_inventory(self) -> Inventory:
        """The file's inventory now."""
        return load_inventory_file(self.path)
