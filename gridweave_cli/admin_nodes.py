"""``gridweave admin nodes``, ``gridweave admin cordon|uncordon|drain NODE``: the nodes joined
with a join key; take one out of scheduling, put it back, or let its work finish before it is
taken down."""

from __future__ import annotations

import time
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from gridweave_cli._durations import seconds_of
from gridweave_cli._errors import CliError, handle_errors
from gridweave_cli._output import JsonFlag, age, emit_json, mib_text, stderr, stdout
from gridweave_cli._platform import platform_client
from gridweave_cli.exit_codes import ExitCode
from gridweave_clients.nodes.models import NodeResponse
from gridweave_clients.platform import PlatformClient
from gridweave_clients.platform.admin import DrainNodeResponse

__all__ = ["DRAIN_POLL_SECONDS", "cordon", "drain", "joined_nodes", "uncordon"]

#: How often ``drain --wait`` asks again what still holds the node.
DRAIN_POLL_SECONDS = 2.0

NodeArgument = Annotated[
    str,
    typer.Argument(help="The node's name (from `gridweave nodes`).", show_default=False),
]


@handle_errors
def joined_nodes(json_output: JsonFlag = False) -> None:
    """List the nodes joined with a join key: Ready or NotReady, cordoned, when joined, the
    last heartbeat, and their GPUs (admins only). `gridweave nodes` shows every node's VRAM,
    the gateway's own machine included.

    Examples:

        gridweave admin nodes

        gridweave admin nodes --json
    """
    with platform_client() as client:
        listed = client.list_joined_nodes()
    if json_output:
        emit_json(listed.model_dump(mode="json"))
        return
    if not listed.nodes:
        stdout().print("No joined nodes (`gridweave admin join-key create` makes a key).")
        return
    table = Table("node", "status", "", "joined", "heartbeat", "GPUs", "VPN address", box=None)
    for node in listed.nodes:
        gpus = ", ".join(
            f"{gpu.index} {escape(gpu.model)} {mib_text(gpu.vram_mb)}" for gpu in node.gpus
        )
        table.add_row(
            escape(node.name),
            "[green]Ready[/]" if node.status == "Ready" else "[red]NotReady[/]",
            "[yellow]cordoned[/]" if node.cordoned else "",
            f"{age(node.joined_at)} ago" if node.joined_at else "-",
            f"{age(node.last_heartbeat_at)} ago" if node.last_heartbeat_at else "-",
            gpus or "-",
            node.vpn_ip or "-",
        )
    stdout().print(table)


@handle_errors
def cordon(node: NodeArgument, json_output: JsonFlag = False) -> None:
    """Cordon a joined node: it takes no new jobs or endpoints; what runs there stays
    (admins only). A node not joined with a join key (this machine, a node of the gateway's
    inventory file) cannot be cordoned here: the error says how.

    Examples:

        gridweave admin cordon gpu-node-1
    """
    with platform_client() as client:
        answer = client.cordon_node(node)
    _print_node(answer, "cordoned: it takes no new work", json_output)


@handle_errors
def uncordon(node: NodeArgument, json_output: JsonFlag = False) -> None:
    """Uncordon a joined node: it takes new jobs and endpoints again (admins only).

    Examples:

        gridweave admin uncordon gpu-node-1
    """
    with platform_client() as client:
        answer = client.uncordon_node(node)
    _print_node(answer, "uncordoned: it takes new work again", json_output)


@handle_errors
def drain(
    node: NodeArgument,
    wait: Annotated[
        bool, typer.Option("--wait", help="Wait until nothing holds the node any more.")
    ] = False,
    timeout: Annotated[
        str, typer.Option("--timeout", help="With --wait: give up after this long (10m, 1h).")
    ] = "30m",
    json_output: JsonFlag = False,
) -> None:
    """Drain a joined node: cordon it and show the VRAM its jobs and endpoints still hold;
    nothing is cancelled. It is drained (safe to take down) once nothing holds it
    (admins only).

    With --wait the command asks again every few seconds until the node is drained, and
    fails (exit 1) if it is not drained after --timeout; the node stays cordoned.

    Examples:

        gridweave admin drain gpu-node-1

        gridweave admin drain gpu-node-1 --wait --timeout 1h
    """
    timeout_seconds = seconds_of(timeout, param_hint="--timeout")
    with platform_client() as client:
        answer = client.drain_node(node)
        if wait and not answer.drained:
            answer = _wait_drained(client, answer, timeout_seconds)
    if json_output:
        emit_json(answer.model_dump(mode="json"))
        return
    name = escape(answer.node.name)
    if answer.drained:
        stdout().print(f"{name} drained: nothing holds it, it may be taken down")
    else:
        stdout().print(
            f"{name} cordoned, still held: {mib_text(answer.held_mb)} "
            "(run again, or with --wait, to follow it)"
        )


def _wait_drained(
    client: PlatformClient, answer: DrainNodeResponse, timeout_seconds: int
) -> DrainNodeResponse:
    """Drain again every :data:`DRAIN_POLL_SECONDS` until drained; past the timeout: exit 1."""
    deadline = time.monotonic() + timeout_seconds
    label = f"draining {escape(answer.node.name)}: {{}} held"
    with stderr().status(label.format(mib_text(answer.held_mb)), spinner="dots") as status:
        while not answer.drained:
            if time.monotonic() >= deadline:
                raise CliError(
                    f"{answer.node.name} is not drained after {timeout_seconds} s: "
                    f"{mib_text(answer.held_mb)} still held (it stays cordoned)",
                    ExitCode.FAILED,
                )
            time.sleep(min(DRAIN_POLL_SECONDS, max(0.0, deadline - time.monotonic())))
            answer = client.drain_node(answer.node.name)
            status.update(label.format(mib_text(answer.held_mb)))
    return answer


def _print_node(answer: NodeResponse, done: str, json_output: bool) -> None:
    if json_output:
        emit_json(answer.model_dump(mode="json"))
        return
    stdout().print(f"{escape(answer.name)} {done} ({answer.status}, {len(answer.gpus)} GPUs)")
