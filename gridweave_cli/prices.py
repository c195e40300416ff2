"""``gridweave prices``: what a GPU-second costs, by vendor and VRAM per GPU."""

from __future__ import annotations

import typer
from rich.table import Table

from gridweave_cli._errors import handle_errors
from gridweave_cli._help import add_commands
from gridweave_cli._output import JsonFlag, credits_text, emit_json, mib_text, stdout
from gridweave_cli._platform import platform_client

__all__ = ["prices", "register"]

_SECONDS_PER_HOUR = 3600


@handle_errors
def prices(json_output: JsonFlag = False) -> None:
    """Show what a GPU-second costs: by vendor, the VRAM per GPU each price covers up to,
    and the price per GPU-second and per GPU-hour, in credits.

    A job or an endpoint replica is billed at the first tier of its vendor that covers its
    VRAM per GPU, for each second it runs on each of its GPUs. A job holds price x timeout x
    GPUs while it runs (vendor any: the dearest vendor's price); what it did not use is given
    back. --json gives the table as the platform answers it (micro-credits per GPU-second).

    Examples:

        gridweave prices

        gridweave prices --json
    """
    with platform_client() as client:
        table = client.get_prices()
    if json_output:
        emit_json(table.model_dump(mode="json"))
        return
    rows = Table(box=None)
    rows.add_column("vendor")
    rows.add_column("VRAM per GPU", justify="right")
    rows.add_column("per GPU-second", justify="right")
    rows.add_column("per GPU-hour", justify="right")
    for vendor, tiers in sorted(table.root.items()):
        below = 0
        for tier in tiers:
            covered = (
                f"over {mib_text(below)}"
                if tier.max_vram_mb is None
                else f"up to {mib_text(tier.max_vram_mb)}"
            )
            price = tier.micro_credits_per_gpu_second
            rows.add_row(
                vendor,
                covered,
                credits_text(price),
                credits_text(price * _SECONDS_PER_HOUR),
            )
            below = tier.max_vram_mb or below
    stdout().print(rows)


def register(app: typer.Typer) -> None:
    """Add ``prices`` to ``app``."""
    add_commands(app, prices)
