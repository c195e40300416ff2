"""``gridweave endpoint-logs NAME``: what an endpoint's replicas wrote, the latest lines."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.markup import escape

from gridweave_cli._errors import handle_errors
from gridweave_cli._help import add_commands
from gridweave_cli._output import JsonFlag, age, emit_json, stderr
from gridweave_cli._platform import platform_client
from gridweave_clients.gateway.endpoints import MAX_LOG_LINES, EndpointLogsResponse

__all__ = ["endpoint_logs", "register"]


@handle_errors
def endpoint_logs(
    name: Annotated[str, typer.Argument(help="The endpoint's name.", show_default=False)],
    lines: Annotated[
        int,
        typer.Option(
            "--lines", "-n", min=1, max=MAX_LOG_LINES, help="The latest lines of each stream."
        ),
    ] = 200,
    json_output: JsonFlag = False,
) -> None:
    """Print what an endpoint's replicas wrote: the latest lines of each replica's stdout (on
    stdout) and stderr (on stderr), the running replicas first, then the latest ended ones.

    A line on stderr names each replica, its state and when it started. Another user's
    endpoint, or none, is not found (exit code 3).

    Examples:

        gridweave endpoint-logs chat

        gridweave endpoint-logs chat --lines 50 --json
    """
    with platform_client() as client:
        read = client.get_endpoint_logs(name, lines=lines)
    if json_output:
        emit_json(read.model_dump(mode="json"))
        return
    print_replica_logs(name, read)


def print_replica_logs(name: str, read: EndpointLogsResponse) -> None:
    """Each replica's header on stderr, then its streams, each to its own."""
    notes = stderr()
    if not read.replicas:
        notes.print(
            f"{escape(name)}: no replica output" + (f" ({read.message})" if read.message else "")
        )
        return
    for replica in read.replicas:
        started = f", started {age(replica.started_at)} ago" if replica.started_at else ""
        notes.print(f"[bold]== replica {escape(replica.replica)}[/] ({replica.state}{started})")
        if replica.error:
            notes.print(f"[yellow]note:[/] {escape(replica.error)}")
        for stream in replica.streams:
            target = sys.stdout if stream.stream == "stdout" else sys.stderr
            if stream.truncated:
                notes.print(f"[dim]... (older {stream.stream} lines left out)[/]")
            for line in stream.lines:
                target.write(line.rstrip("\n") + "\n")
            target.flush()


def register(app: typer.Typer) -> None:
    """Add ``endpoint-logs`` to ``app``."""
    add_commands(app, endpoint_logs)
