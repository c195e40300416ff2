"""``gridweave map FILE.py::FUNCTION ITEMS...``: one function over many items as one map;
``gridweave maps`` lists the newest maps with their progress; ``gridweave map-status
MAP_ID`` shows one map's progress and workers.

The function is loaded as ``gridweave run`` loads it; each item is one call's single
argument (a JSON literal, else a string), or a line of ``--items-file`` (one JSON value per
line). While the map runs a progress bar on stderr counts the items done and failed; then
each value is printed, one per line (its repr; JSON with ``--json``), in the items' order.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

import gridweave as gw
from gridweave_cli._errors import exit_with, handle_errors, warn
from gridweave_cli._help import command_help
from gridweave_cli._output import JsonFlag, age, emit_json, stderr, stdout
from gridweave_cli._platform import platform_client, user_config
from gridweave_cli._tables import Column, fitted_table
from gridweave_cli.exit_codes import ExitCode
from gridweave_cli.run import _remote_function, load_function
from gridweave_clients.platform import PlatformClient
from gridweave_clients.platform.maps import MAX_MAPS_PAGE, MapResponse, MapWorkerResponse

__all__ = ["map_items", "map_status", "maps", "register"]

#: The maps ``gridweave maps`` lists without --limit or --all (the newest).
DEFAULT_MAPS_LIMIT = 20

MAP_COLUMNS = (
    Column("map"),
    Column("function", min_width=8),
    Column("phase"),
    Column("done/total", short="done", justify="right"),
    Column("failed", justify="right"),
    Column("workers", justify="right", drop=1),
    Column("age", drop=2),
)
WORKER_COLUMNS = (
    Column("worker"),
    Column("phase"),
    Column("node [GPUs]", short="node", min_width=6, drop=2),
    Column("done", justify="right"),
    Column("failed", justify="right"),
    Column("tries", justify="right", drop=3),
    Column("reason", min_width=8, drop=1),
)


def _items(texts: list[str], items_file: Path | None) -> list[Any]:
    items: list[Any] = [_value(text) for text in texts]
    if items_file is not None:
        try:
            lines = items_file.read_text().splitlines()
        except OSError as exc:
            message = f"{items_file}: {exc.strerror}"
            raise typer.BadParameter(message, param_hint="--items-file") from None
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                items.append(json.loads(line))
            except ValueError as exc:
                raise typer.BadParameter(
                    f"{items_file}:{number}: not JSON: {exc}", param_hint="--items-file"
                ) from None
    if not items:
        raise typer.BadParameter("give items, or --items-file", param_hint="ITEMS")
    return items


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _follow(handle: gw.MapHandle[Any]) -> MapResponse:
    """Wait for the map with a progress bar of the items done and failed on stderr."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[failed]} failed"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=stderr(), transient=True) as progress:
        task = progress.add_task(handle.map_id, total=handle.items, failed=0)

        def show(status: MapResponse) -> None:
            progress.update(
                task,
                completed=status.done + status.failed,
                failed=status.failed,
                description=f"{handle.map_id} {status.phase}",
            )

        return handle.wait(progress=show)


@handle_errors
def map_items(
    target: Annotated[
        str, typer.Argument(help="FILE.py::FUNCTION, the function to map.", show_default=False)
    ],
    items: Annotated[
        list[str] | None,
        typer.Argument(
            help="The items, one call each: a JSON literal (7, '[1, 2]'), else a string.",
            show_default=False,
        ),
    ] = None,
    items_file: Annotated[
        Path | None,
        typer.Option(help="A file of items, one JSON value per line.", show_default=False),
    ] = None,
    concurrency: Annotated[
        int, typer.Option(min=1, max=256, help="Workers at most, each one GPU allocation.")
    ] = gw.DEFAULT_MAP_CONCURRENCY,
    vram: Annotated[
        str | None,
        typer.Option(
            help="VRAM per GPU of each worker (needed for a plain function).", show_default=False
        ),
    ] = None,
    vendor: Annotated[
        str | None, typer.Option(help="nvidia, amd or any (default any).", show_default=False)
    ] = None,
    timeout: Annotated[
        str | None,
        typer.Option(
            help="The longest each worker may run its share (default 10m).", show_default=False
        ),
    ] = None,
    retries: Annotated[
        int | None,
        typer.Option(
            min=0, max=10, help="How often an item that raised is tried again.", show_default=False
        ),
    ] = None,
    detach: Annotated[
        bool, typer.Option("--detach", "-d", help="Print the map's id and return at once.")
    ] = False,
    json_output: JsonFlag = False,
) -> None:
    """Run a function of a Python file over many items as one map, and print each value.

    The items run on up to --concurrency workers, each one GPU allocation billed per second
    it runs. A progress bar counts the items done and failed; then the values are printed
    in the items' order. An item that raised shows as its error (and the remote traceback
    on stderr); the exit code is then 1.

    Examples:

        gridweave map train.py::square 1 2 3 4

        gridweave map embed.py::embed --items-file texts.jsonl --concurrency 8 --json
    """
    user_config()
    calls = _items(items or [], items_file)
    function = _remote_function(
        load_function(target),
        vram=vram,
        gpus=None,
        vendor=vendor,
        timeout=timeout,
        retries=retries,
    )
    handle = function.spawn_map(calls, concurrency=concurrency)
    if detach:
        if json_output:
            emit_json({"map_id": handle.map_id})
        else:
            sys.stdout.write(f"{handle.map_id}\n")
        return
    try:
        status = _follow(handle)
    except KeyboardInterrupt:
        exit_with(
            f"stopped waiting; map {handle.map_id} goes on (`gridweave map-status "
            f"{handle.map_id}` shows it)",
            ExitCode.FAILED,
        )
    values: list[Any] = []
    failed = 0
    for index, value, error in handle.iter_outcomes():
        if error is not None:
            failed += 1
            remote = getattr(error, "remote_traceback", "")
            sys.stderr.write(f"item {index}: {remote.rstrip()}\n")
            values.append(f"{type(error).__name__}: {error}")
        else:
            values.append(value)
    if json_output:
        emit_json(values)
    else:
        for value in values:
            sys.stdout.write(f"{value!r}\n")
    if failed or status.phase != "Completed":
        exit_with(
            f"map {handle.map_id} {status.phase}: {status.done} done, {failed} failed "
            f"of {status.items}",
            ExitCode.FAILED,
        )


def _newest_maps(client: PlatformClient, limit: int | None) -> tuple[list[MapResponse], int]:
    """The newest ``limit`` maps (None: all of them, page after page), newest first, and how
    many there are in all."""
    listed: list[MapResponse] = []
    cursor: str | None = None
    while True:
        size = MAX_MAPS_PAGE if limit is None else min(MAX_MAPS_PAGE, limit - len(listed))
        page = client.list_maps(limit=size, cursor=cursor)
        listed.extend(page.maps)
        cursor = page.next_cursor
        if cursor is None or (limit is not None and len(listed) >= limit):
            return listed, max(page.total, len(listed))


@handle_errors
def maps(
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, help="Show the newest this many maps.")
    ] = DEFAULT_MAPS_LIMIT,
    show_all: Annotated[bool, typer.Option("--all", "-a", help="Show every map.")] = False,
    json_output: JsonFlag = False,
) -> None:
    """List your newest maps, newest first: id, function, phase, inputs done of all, failed,
    workers, age.

    The newest 20 unless --limit or --all says otherwise; when there are more, a line on
    stderr says how many. `gridweave map-status MAP_ID` shows one map's workers. A narrow
    terminal leaves out columns (workers first, then the age), never cuts an id.

    Examples:

        gridweave maps

        gridweave maps --all --json
    """
    with platform_client() as client:
        listed, total = _newest_maps(client, None if show_all else limit)
    if json_output:
        emit_json({"maps": [found.model_dump(mode="json") for found in listed], "total": total})
        return
    if not listed:
        stdout().print("No maps.")
        return
    rows = [
        [
            found.map_id,
            escape(found.function_name or "-"),
            found.phase,
            f"{found.done}/{found.items}",
            str(found.failed),
            str(len(found.workers)),
            age(found.created_at),
        ]
        for found in listed
    ]
    console = stdout()
    console.print(fitted_table(console, MAP_COLUMNS, rows))
    if total > len(listed):
        warn(f"the newest {len(listed)} of {total} maps; --limit N or --all shows more")


def _placement(worker: MapWorkerResponse) -> str:
    if worker.node is None:
        return "-"
    gpus = ",".join(str(index) for index in worker.gpu_indices)
    return f"{worker.node} [{gpus}]" if gpus else worker.node


@handle_errors
def map_status(
    map_id: Annotated[str, typer.Argument(help="The map's id (map-...).", show_default=False)],
    json_output: JsonFlag = False,
) -> None:
    """Show a map's progress (items done and failed of all) and its workers."""
    user_config()
    with platform_client() as client:
        status = client.get_map(map_id)
    if json_output:
        emit_json(status.model_dump(mode="json"))
        return
    out = stdout()
    out.print(
        f"{status.map_id} {status.phase}: {status.done} done, {status.failed} failed "
        f"of {status.items} ({status.chunks} chunks of {status.chunk_items})",
        markup=False,
    )
    rows = [
        [
            worker.job_id,
            worker.phase.value,
            escape(_placement(worker)),
            str(worker.done),
            str(worker.failed),
            str(worker.attempts),
            escape(worker.reason or "-"),
        ]
        for worker in status.workers
    ]
    out.print(fitted_table(out, WORKER_COLUMNS, rows))


def register(app: typer.Typer) -> None:
    """Add ``map``, ``maps`` and ``map-status`` to ``app``."""
    app.command(name="map", help=command_help(map_items))(map_items)
    app.command(name="maps", help=command_help(maps))(maps)
    app.command(name="map-status", help=command_help(map_status))(map_status)
