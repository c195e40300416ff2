"""``gridweave jobs``, ``gridweave logs JOB [--follow]`` and ``gridweave cancel JOB``."""

from __future__ import annotations

import sys
import time
from typing import Annotated, Any

import typer
from rich.markup import escape

from gridweave_cli._errors import CliError, handle_errors, warn
from gridweave_cli._help import add_commands
from gridweave_cli._output import JsonFlag, age, credits_text, emit_json, mib_text, stdout
from gridweave_cli._platform import platform_client
from gridweave_cli._tables import Column, fitted_table
from gridweave_cli.exit_codes import ExitCode
from gridweave_clients import Conflict, ServiceRefused, ServiceUnavailable
from gridweave_clients.platform import PlatformClient
from gridweave_clients.platform.models import JobLogsResponse, JobResponse
from gridweave_controller.phases import JobPhase

__all__ = ["cancel", "job_costs", "jobs", "logs", "register"]

#: Seconds between two reads of ``logs --follow``.
FOLLOW_INTERVAL_SECONDS = 0.5
#: The jobs ``gridweave jobs`` lists without --limit or --all (the newest).
DEFAULT_JOBS_LIMIT = 20
# The largest page the platform answers; --all reads page after page of it.
_JOBS_PAGE = 500
# The usage records read to find the cost of the jobs listed (the newest first).
_USAGE_PAGE = 1000

JobArgument = Annotated[str, typer.Argument(help="The job id (as `gridweave jobs` lists it).")]


def _phase(value: str | None) -> JobPhase | None:
    if value is None:
        return None
    for phase in JobPhase:
        if phase.value.lower() == value.lower():
            return phase
    names = ", ".join(phase.value for phase in JobPhase)
    raise typer.BadParameter(f"{value!r}: expected one of {names}", param_hint="--phase")


def job_costs(client: PlatformClient) -> dict[str, int]:
    """The cost in micro-credits of the user's recently billed jobs, by job id.

    The costs are extras: when usage cannot be read (metering down), the jobs are listed
    without them, with a note.
    """
    try:
        page = client.list_usage(limit=_USAGE_PAGE)
    except (ServiceUnavailable, ServiceRefused) as exc:
        warn(f"costs left out: usage could not be read ({exc.message})")
        return {}
    return {record.job_id: record.cost for record in page.records if record.job_id}


def _placement(job: JobResponse) -> str:
    if job.node is None:
        return "-"
    gpus = ",".join(str(index) for index in job.gpu_indices)
    return f"{job.node} [{gpus}]" if gpus else job.node


def _newest_jobs(
    client: PlatformClient, phase: JobPhase | None, limit: int | None
) -> tuple[list[JobResponse], int]:
    """The newest ``limit`` jobs (None: all of them, page after page), newest first, and how
    many there are in all."""
    listed: list[JobResponse] = []
    cursor: str | None = None
    while True:
        size = _JOBS_PAGE if limit is None else min(_JOBS_PAGE, limit - len(listed))
        page = client.list_jobs(phase, limit=size, cursor=cursor)
        listed.extend(page.jobs)
        cursor = page.next_cursor
        if cursor is None or (limit is not None and len(listed) >= limit):
            return listed, page.total if page.total is not None else len(listed)


JOB_COLUMNS = (
    Column("job"),
    Column("function", min_width=8),
    Column("phase"),
    Column("node [GPUs]", short="node", min_width=6, drop=2),
    Column("GPUs x VRAM", short="VRAM", drop=1),
    Column("age", drop=3),
    Column("cost", justify="right", drop=4),
)


@handle_errors
def jobs(
    phase: Annotated[
        str | None,
        typer.Option(
            "--phase",
            help="Only jobs in this phase (Pending, Allocated, Running, Completed, Failed, "
            "Cancelled, TimedOut).",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[
        int,
        typer.Option("--limit", "-n", min=1, help="Show the newest this many jobs."),
    ] = DEFAULT_JOBS_LIMIT,
    show_all: Annotated[bool, typer.Option("--all", "-a", help="Show every job.")] = False,
    json_output: JsonFlag = False,
) -> None:
    """List your newest jobs, newest first: id, function, phase, node and GPUs, GPUs x VRAM,
    age, cost.

    The newest 20 unless --limit or --all says otherwise; when there are more, a line on
    stderr says how many. The cost is known once metering billed the job. A narrow terminal
    leaves out columns (VRAM first, then the node, the age and the cost), never cuts an id.
    A map's workers are jobs too (MAP_ID-w0, -w1...): `gridweave maps` lists the maps with
    their progress (inputs done of all, failed).

    Examples:

        gridweave jobs

        gridweave jobs --limit 100

        gridweave jobs --all --phase running --json
    """
    wanted = _phase(phase)
    with platform_client() as client:
        listed, total = _newest_jobs(client, wanted, None if show_all else limit)
        costs = job_costs(client) if listed else {}
    if json_output:
        emit_json(
            {
                "jobs": [
                    {**job.model_dump(mode="json"), "cost": costs.get(job.job_id)} for job in listed
                ],
                "total": total,
            }
        )
        return
    if not listed:
        stdout().print("No jobs" + (f" in phase {wanted.value}." if wanted else "."))
        return
    rows = []
    for job in listed:
        cost = costs.get(job.job_id)
        rows.append(
            [
                job.job_id,
                escape(job.function_name or "-"),
                job.phase.value,
                escape(_placement(job)),
                f"{job.gpu_count} x {mib_text(job.vram_mb)}",
                age(job.created_at),
                "-" if cost is None else credits_text(cost),
            ]
        )
    console = stdout()
    console.print(fitted_table(console, JOB_COLUMNS, rows))
    if total > len(listed):
        warn(f"the newest {len(listed)} of {total} jobs; --limit N or --all shows more")


def _print_new(read: JobLogsResponse, json_output: bool) -> None:
    if json_output:
        emit_json(read.model_dump(mode="json"), one_line=True)
        return
    if read.stdout_truncated or read.stderr_truncated:
        warn("the output was longer than the platform keeps: only its tail follows")
    if read.stdout:
        sys.stdout.write(read.stdout)
        sys.stdout.flush()
    if read.stderr:
        sys.stderr.write(read.stderr)
        sys.stderr.flush()


@handle_errors
def logs(
    job_id: JobArgument,
    follow: Annotated[
        bool,
        typer.Option("--follow", "-f", help="Keep printing new output until the job has finished."),
    ] = False,
    json_output: JsonFlag = False,
) -> None:
    """Print what a job wrote: its stdout to stdout, its stderr to stderr.

    With --follow, new output is printed as it comes, until the job has finished. With
    --json, each read that brought something is one JSON object (JSON Lines with --follow).

    Examples:

        gridweave logs job-0123456789abcdef0123

        gridweave logs job-0123456789abcdef0123 --follow
    """
    with platform_client() as client:
        read = client.get_job_logs(job_id)
        _print_new(read, json_output)
        while follow and not read.finished:
            time.sleep(FOLLOW_INTERVAL_SECONDS)
            read = _next_read(client, read, json_output)
        if follow:
            # Output written just before the job finished may not have been in the read
            # that saw it finished: one more read from the offsets reached takes it.
            _next_read(client, read, json_output)


def _next_read(
    client: PlatformClient, previous: JobLogsResponse, json_output: bool
) -> JobLogsResponse:
    """Read from where ``previous`` ended; print what is new."""
    read = client.get_job_logs(
        previous.job_id,
        stdout_offset=previous.stdout_offset,
        stderr_offset=previous.stderr_offset,
    )
    if read.stdout or read.stderr:
        _print_new(read, json_output)
    return read


def _job_json(job: JobResponse) -> dict[str, Any]:
    return job.model_dump(mode="json")


@handle_errors
def cancel(job_id: JobArgument, json_output: JsonFlag = False) -> None:
    """Cancel a job that has not finished; its credit hold is released (or settled for the
    seconds it ran).

    Cancelling a cancelled job again answers as it is. A job that has already finished
    cannot be cancelled (exit code 1).

    Examples:

        gridweave cancel job-0123456789abcdef0123
    """
    with platform_client() as client:
        try:
            job = client.cancel_job(job_id)
        except Conflict as exc:
            raise CliError(exc.message, ExitCode.FAILED) from exc
    if json_output:
        emit_json(_job_json(job))
        return
    stdout().print(f"{job.job_id}: {job.phase.value}")


def register(app: typer.Typer) -> None:
    """Add ``jobs``, ``logs`` and ``cancel`` to ``app``."""
    add_commands(app, jobs, logs, cancel)
