"""``gridweave nodes``: every node's GPUs with their used and free VRAM drawn as bars."""

from __future__ import annotations

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from gridweave_cli._errors import handle_errors
from gridweave_cli._help import add_commands
from gridweave_cli._output import JsonFlag, emit_json, mib_text, stdout
from gridweave_cli._platform import platform_client
from gridweave_clients.gateway.models import InventoryResponse

__all__ = ["nodes", "nodes_table", "register", "vram_bar"]

BAR_WIDTH = 24


@handle_errors
def nodes(json_output: JsonFlag = False) -> None:
    """Show the platform's nodes and GPUs: VRAM used (held by jobs and endpoints) and free.

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
    stdout().print(nodes_table(inventory) if inventory.nodes else "No nodes.")


def vram_bar(held_mb: int, vram_mb: int, *, width: int = BAR_WIDTH) -> Text:
    """Used VRAM as full blocks, free as light shade: readable without colours too."""
    used = 0 if vram_mb <= 0 else min(width, round(width * held_mb / vram_mb))
    if held_mb > 0:
        used = max(used, 1)  # a little held still shows
    share = held_mb / vram_mb if vram_mb > 0 else 1.0
    colour = "green" if share < 0.6 else "yellow" if share < 0.9 else "red"
    bar = Text("█" * used, style=colour)
    bar.append("░" * (width - used), style="dim")
    return bar


def nodes_table(inventory: InventoryResponse) -> Table:
    """One row per GPU: node, index and vendor, model, the bar, used / total, free, marks."""
    table = Table("node", "GPU", "model", "VRAM used", "", "free", "", box=None)
    for node in inventory.nodes:
        state = "" if node.ready else " [red](not ready)[/]"
        for position, gpu in enumerate(node.gpus):
            marks = []
            if gpu.simulated:
                marks.append("[yellow]simulated[/]")
            if not gpu.schedulable:
                marks.append("[red]cordoned[/]")
            table.add_row(
                escape(node.name) + state if position == 0 else "",
                f"{gpu.index} {escape(gpu.vendor)}",
                escape(gpu.model),
                vram_bar(gpu.held_mb, gpu.vram_mb),
                f"{mib_text(gpu.held_mb)} / {mib_text(gpu.vram_mb)}",
                mib_text(gpu.free_mb),
                " ".join(marks),
            )
        if not node.gpus:
            table.add_row(escape(node.name) + state, "-", "no GPUs", "", "", "", "")
    return table


def register(app: typer.Typer) -> None:
    """Add ``nodes`` to ``app``."""
    add_commands(app, nodes)
