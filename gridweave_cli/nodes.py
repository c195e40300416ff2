"""``gridweave nodes``: every node's GPUs with their held and free VRAM drawn as bars, the
VRAM measured in use, and what holds it."""

from __future__ import annotations

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

__all__ = ["holders_text", "nodes", "nodes_table", "register", "vram_bar"]

BAR_WIDTH = 24


@handle_errors
def nodes(json_output: JsonFlag = False) -> None:
    """Show the platform's nodes and GPUs: VRAM held by jobs and endpoints, free, measured in
    use (`-` where not measured: AMD, declared and simulated GPUs), and what holds it (every
    holder for an admin, your own jobs and endpoints otherwise).

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
    console.print(nodes_table(inventory, console) if inventory.nodes else "No nodes.")


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
