"""``gridweave credits`` (balance, held, available) and ``gridweave usage`` (what was billed)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from gridweave_cli._errors import handle_errors
from gridweave_cli._help import add_commands
from gridweave_cli._output import JsonFlag, credits_text, emit_json, mib_text, stdout
from gridweave_cli._platform import platform_client
from gridweave_cli._tables import Column, fitted_table

__all__ = ["credits", "register", "usage"]


@handle_errors
def credits(json_output: JsonFlag = False) -> None:
    """Show your credits: the balance, what running jobs hold, and what is available.

    Amounts are credits (1 credit = 1,000,000 micro-credits); --json gives micro-credits.

    Examples:

        gridweave credits

        gridweave credits --json
    """
    with platform_client() as client:
        account = client.get_credits()
    if json_output:
        emit_json(account.model_dump(mode="json"))
        return
    table = Table(box=None, show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("balance", credits_text(account.balance))
    table.add_row("held", credits_text(account.held))
    table.add_row("available", credits_text(account.available))
    stdout().print(table)


USAGE_COLUMNS = (
    Column("job or endpoint"),
    Column("node [GPUs]", short="node", min_width=6, drop=2),
    Column("GPUs x VRAM", short="VRAM", drop=1),
    Column("billed s", short="secs", justify="right"),
    Column("cost", justify="right"),
    Column("finished", drop=3),
    Column("settled", drop=4),
)


@handle_errors
def usage(
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=1000, help="Show at most this many records.")
    ] = 50,
    json_output: JsonFlag = False,
) -> None:
    """List what you were billed, newest first: job, node, GPUs, seconds, price, cost.

    An endpoint is billed a record per period (a minute by default) while it runs, its
    replicas' seconds together. The totals cover every record, not only those shown. A
    narrow terminal leaves out columns (VRAM first, then the node, when it finished and
    whether it is settled), never cuts an id.

    Examples:

        gridweave usage

        gridweave usage --limit 10 --json
    """
    with platform_client() as client:
        page = client.list_usage(limit=limit)
    if json_output:
        emit_json(page.model_dump(mode="json"))
        return
    if not page.records:
        stdout().print("No usage yet.")
        return
    rows = []
    for record in page.records:
        gpus = ",".join(str(index) for index in record.gpu_indices)
        rows.append(
            [
                record.job_id or record.endpoint_id or record.kind,
                escape(f"{record.node} [{gpus}]"),
                f"{record.gpu_count} x {mib_text(record.vram_mb)}",
                str(record.billed_seconds),
                credits_text(record.cost),
                f"{record.finished_at:%Y-%m-%d %H:%M:%S}",
                record.settlement.state,
            ]
        )
    console = stdout()
    console.print(fitted_table(console, USAGE_COLUMNS, rows))
    totals = page.totals
    console.print(
        f"{totals.records} records, {totals.billed_seconds} billed s, "
        f"{totals.gpu_seconds} GPU-s, cost {credits_text(totals.cost)}, "
        f"charged {credits_text(totals.charged)} credits"
    )


def register(app: typer.Typer) -> None:
    """Add ``credits`` and ``usage`` to ``app``."""
    add_commands(app, credits, usage)
