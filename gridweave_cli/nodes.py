"""``gridweave nodes``: every node's free CPU and memory, then its GPUs with their held and
free VRAM drawn as bars, the VRAM measured in use, and what holds it."""

from __future__ import annotations

from collections.abc import Callable

import typer
from rich.console import Console, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from gridweave_cli._errors import handle_errors
from gridweave_cli._help import add_commands
from gridweave_cli._output import JsonFlag, emit_json, mib_text, stdout
from gridweave_cli._platform import platform_client
from gridweave_cli._tables import Column, fitted_table
from gridweave_clients.gateway.models import InventoryGpuResponse, InventoryResponse

__all__ = [
    "capacity_table",
    "cores_text",
    "holders_text",
    "memory_text",
    "nodes",
    "nodes_table",
    "register",
    "vram_bar",
]

BAR_WIDTH = 24


@handle_errors
def nodes(json_output: JsonFlag = False) -> None:
    """Show the platform's nodes and GPUs: each node's free CPU and memory (of what it
    declares; `-` where it declares none: no limit), then each GPU's VRAM held by jobs and
    endpoints, free, measured in use (`-` where not measured: AMD, declared and simulated
    GPUs), and what holds it (every holder for an admin, your own jobs and endpoints
    otherwise).

    A GPU marked `simulated` is a declared stand-in, not a real device; a node not ready or
    a cordoned GPU takes no new work.

    Examples:

        gridweave nodes

        gridweave nodes --json
    """
    with platform_client() as client:
        inventory = client.list_nodes()
    if json_output:
        emit_json(inventory.model_dump(mode="json"))
        return
    console = stdout()
    if not inventory.nodes:
        console.print("No nodes.")
        return
    console.print(capacity_table(inventory, console))
    console.print(nodes_table(inventory, console))


def cores_text(millis: int) -> str:
    """Thousandths of a core as cores: ``16``, ``12.5``, ``0.25``."""
    return f"{millis / 1000:g}"


def memory_text(mib: int) -> str:
    """Memory for people: whole GiB, else GiB to a tenth from 10 GiB up (``510.5 GiB``; a
    free figure need not be exact to the MiB), else as VRAM is (``1536 MiB``)."""
    if mib % 1024 == 0 or mib < 10 * 1024:
        return mib_text(mib)
    return f"{mib / 1024:.1f} GiB"


def _free_of(free: int | None, total: int | None, text: Callable[[int], str]) -> str:
    if total is None or free is None:
        return "-"
    return f"{text(free)} / {text(total)}"


CAPACITY_COLUMNS = (
    Column("node"),
    Column("CPU free (cores)", short="CPU free"),
    Column("memory free", short="mem free"),
    Column("GPUs free", short="GPUs", drop=1),
)


def capacity_table(inventory: InventoryResponse, console: Console) -> Table:
    """One row per node: its free CPU (cores) and memory of what it declares (``-``: none
    declared, no limit), and its GPUs nothing holds of all."""
    rows: list[list[RenderableType]] = []
    for node in inventory.nodes:
        state = "" if node.ready else " [red](not ready)[/]"
        idle = sum(1 for gpu in node.gpus if gpu.held_mb == 0)
        rows.append(
            [
                escape(node.name) + state,
                _free_of(node.cpu_free_millis, node.cpu_millis, cores_text),
                _free_of(node.memory_free_mb, node.memory_mb, memory_text),
                f"{idle} / {len(node.gpus)}",
            ]
        )
    return fitted_table(console, CAPACITY_COLUMNS, rows)


def vram_bar(held_mb: int, vram_mb: int, *, width: int = BAR_WIDTH) -> Text:
    """Held VRAM as full blocks, free as light shade: readable without colours too."""
    used = 0 if vram_mb <= 0 else min(width, round(width * held_mb / vram_mb))
    if held_mb > 0:
        used = max(used, 1)  # a little held still shows
    share = held_mb / vram_mb if vram_mb > 0 else 1.0
    colour = "green" if share < 0.6 else "yellow" if share < 0.9 else "red"
    bar = Text("█" * used, style=colour)
    bar.append("░" * (width - used), style="dim")
    return bar


def holders_text(gpu: InventoryGpuResponse) -> str:
    """What holds the GPU's VRAM: ``kind name (MiB)``, largest first, as the API lists them."""
    return ", ".join(
        f"{holder.kind} {escape(holder.display_name or holder.name)} ({mib_text(holder.vram_mb)})"
        for holder in gpu.allocations
    )


NODE_COLUMNS = (
    Column("node"),
    Column("GPU"),
    Column("model", min_width=12, drop=3),
    Column("", drop=1),  # the bar
    Column("VRAM held"),  # held / total
    Column("free", drop=2),
    Column("in use", short="used", drop=4),
    Column(""),  # simulated, cordoned
    Column("held by", min_width=24),
)


def nodes_table(inventory: InventoryResponse, console: Console) -> Table:
    """One row per GPU: node, index and vendor, model, the bar, held / total, free, measured
    in use, marks and holders; narrower than ``console`` by leaving out the bar, then free,
    the model and in use."""
    rows: list[list[RenderableType]] = []
    for node in inventory.nodes:
        state = "" if node.ready else " [red](not ready)[/]"
        for position, gpu in enumerate(node.gpus):
            marks = []
            if gpu.simulated:
                marks.append("[yellow]simulated[/]")
            if not gpu.schedulable:
                marks.append("[red]cordoned[/]")
            rows.append(
                [
                    escape(node.name) + state if position == 0 else "",
                    f"{gpu.index} {escape(gpu.vendor)}",
                    escape(gpu.model),
                    vram_bar(gpu.held_mb, gpu.vram_mb),
                    f"{mib_text(gpu.held_mb)} / {mib_text(gpu.vram_mb)}",
                    mib_text(gpu.free_mb),
                    "-" if gpu.used_mb is None else mib_text(gpu.used_mb),
                    " ".join(marks),
                    holders_text(gpu),
                ]
            )
        if not node.gpus:
            rows.append([escape(node.name) + state, "no GPUs", "", "", "", "", "", "", ""])
    return fitted_table(console, NODE_COLUMNS, rows)


def register(app: typer.Typer) -> None:
    """Add ``nodes`` to ``app``."""
    add_commands(app, nodes)
