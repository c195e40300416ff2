"""``gridweave credits`` (balance, held, available, this month's spending and the caps;
``credits limits`` sets them) and ``gridweave usage`` (what was billed)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from gridweave_cli._errors import handle_errors
from gridweave_cli._help import add_commands, command_help
from gridweave_cli._output import JsonFlag, credits_text, emit_json, mib_text, stderr, stdout
from gridweave_cli._platform import platform_client
from gridweave_cli._tables import Column, fitted_table
from gridweave_cli.spending_limits import add_spending_rows, limits, spending_warning

__all__ = ["credits", "register", "usage"]


@handle_errors
def credits(ctx: typer.Context, json_output: JsonFlag = False) -> None:
    """Show your credits: the balance, what running jobs hold, what is available, what you
    spent this month and your spending caps (gridweave credits limits sets them).

    Amounts are credits (1 credit = 1,000,000 micro-credits); --json gives micro-credits.
    Once 80% of the monthly cap is spent (held money included), a warning says so.

    Examples:

        gridweave credits

        gridweave credits --json

        gridweave credits limits --monthly 50 --per-job 5
    """
    if ctx.invoked_subcommand is not None:
        return
    with platform_client() as client:
        account = client.get_credits()
        spending = client.get_spending_limits()
    if json_output:
        emit_json({**account.model_dump(mode="json"), "spending": spending.model_dump(mode="json")})
        return
    table = Table(box=None, show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("balance", credits_text(account.balance))
    table.add_row("held", credits_text(account.held))
    table.add_row("available", credits_text(account.available))
    add_spending_rows(table, spending)
    stdout().print(table)
    warning = spending_warning(spending)
    if warning is not None:
        stderr().print(f"[yellow]warning:[/] {warning}")


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
    """Add ``credits`` (with ``credits limits``) and ``usage`` to ``app``."""
    group = typer.Typer(name="credits", help=command_help(credits), invoke_without_command=True)
    group.callback()(credits)
    group.command("limits", help=command_help(limits))(limits)
    app.add_typer(group)
    add_commands(app, usage)
