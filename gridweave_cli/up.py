"""``gridweave up``: the whole platform on this machine until Ctrl-C (``make up`` runs it).

The all-in-one (:mod:`gridweave_allinone`) is imported only here, when the command runs:
the other commands need none of the server packages.
"""

from __future__ import annotations

import shlex
import signal
import time
from types import FrameType
from typing import TYPE_CHECKING

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from gridweave import config_path, write_config
from gridweave_cli._help import add_commands
from gridweave_cli.exit_codes import ExitCode

if TYPE_CHECKING:
    from gridweave_allinone.platform import Started

__all__ = ["kubectl_command", "register", "up"]

_console = Console(stderr=True, highlight=False)
_WATCH_INTERVAL_S = 1.0


def kubectl_command(started: Started) -> str:
    """A command line, ready to paste, that lists the jobs with the platform's kubectl."""
    kubectl = shlex.quote(str(started.kubectl)) if started.kubectl else "kubectl"
    kubeconfig = shlex.quote(str(started.kubeconfig))
    return f"KUBECONFIG={kubeconfig} {kubectl} -n gridweave get gridweavejobs,gridweaveendpoints"


def _print_started(started: Started, *, config_written: bool) -> None:
    table = Table(title="Gridweave is up", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    for name, url in started.urls.items():
        table.add_row(name, url)
    table.add_row("kubectl", str(started.kubectl or "not found (install kubectl)"))
    table.add_row("kubeconfig", str(started.kubeconfig))
    table.add_row("data", str(started.state_dir))
    table.add_row("logs", str(started.log_dir))
    _console.print(table)
    if "prometheus" in started.urls:
        _console.print(
            f"for Grafana: a Prometheus data source at {started.urls['prometheus']} "
            "(the dashboard's Diagnostics page charts the same series)"
        )
    _console.print("jobs and endpoints in Kubernetes (one line, to paste):")
    _console.print(kubectl_command(started), markup=False, soft_wrap=True)
    if started.admin_api_key is not None:
        _console.print(
            f"[bold]admin API key[/bold] (shown once): [green]{started.admin_api_key}[/green]"
        )
        if config_written:
            _console.print(f"saved for the SDK and the CLI in {config_path()}")
    _console.print("Ctrl-C stops every process started here.")


def up() -> None:
    """Start the whole platform on this machine and keep it running until Ctrl-C.

    Starts the embedded PostgreSQL, the Kubernetes API (etcd + kube-apiserver, built from Go
    modules on the first run; GRIDWEAVE_KUBECONFIG uses an existing cluster instead), every
    Gridweave service, and a local Ray when the first job runs. All data lives under
    GRIDWEAVE_STATE_DIR (default ~/.gridweave): a second `gridweave up` keeps every job, key
    and balance. The first start prints an admin API key and saves it for the SDK and the
    CLI when no config file exists yet. Verification emails (no SMTP server set) are printed
    here.

    Examples:

        gridweave up
        GRIDWEAVE_STATE_DIR=/data/gridweave CHAIN_ENABLED=true gridweave up
        GRIDWEAVE_KUBECONFIG=/etc/rancher/k3s/k3s.yaml gridweave up
    """
    try:
        from gridweave_allinone.platform import START_ERRORS, AllInOne
        from gridweave_allinone.settings import AllInOneSettings
    except ImportError as exc:
        _console.print(
            f"[red]gridweave up needs the server extras ({exc.name} is missing):[/red] "
            "pip install 'gridweave[server]'"
        )
        raise typer.Exit(ExitCode.USAGE) from None

    def report(line: str) -> None:
        _console.log(line)

    stop_requested = False

    def request_stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stop_requested
        stop_requested = True
        raise KeyboardInterrupt

    try:
        settings = AllInOneSettings()
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
            for error in exc.errors()
        )
        _console.print(f"[red]gridweave up: bad setting:[/red] {problems}")
        raise typer.Exit(ExitCode.USAGE) from None
    signal.signal(signal.SIGTERM, request_stop)
    # Ctrl-C (SIGINT) stops it even where it started with SIGINT ignored (a non-interactive
    # shell starts a background command so)
    signal.signal(signal.SIGINT, request_stop)
    platform = AllInOne(settings, report=report, show_progress=True)
    try:
        with _console.status("starting Gridweave..."):
            started = platform.start()
        config_written = False
        if started.admin_api_key is not None and not config_path().exists():
            write_config(url=started.urls["platform"], api_key=started.admin_api_key)
            config_written = True
        _print_started(started, config_written=config_written)
        while not stop_requested:
            platform.watch_once()
            time.sleep(_WATCH_INTERVAL_S)
    except KeyboardInterrupt:
        _console.print("stopping...")
    except START_ERRORS as exc:
        _console.print(f"[red]gridweave up failed:[/red] {exc}")
        raise typer.Exit(ExitCode.FAILED) from None
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the stop
        try:
            platform.stop()
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    _console.print("stopped: nothing of Gridweave is left running")


def register(app: typer.Typer) -> None:
    """Add ``up`` to the ``gridweave`` application."""
    add_commands(app, up)
