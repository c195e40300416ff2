"""``gridweave admin join-key create|revoke`` and ``gridweave admin join-keys``: the keys a GPU
machine joins the cluster with."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from gridweave_cli._durations import seconds_of
from gridweave_cli._errors import handle_errors
from gridweave_cli._output import JsonFlag, emit_json, stderr, stdout
from gridweave_cli._platform import platform_client
from gridweave_clients.nodes.models import JoinKeyResponse
from gridweave_controller.vendors import GPU_VENDORS, GpuVendor

__all__ = ["create_join_key", "join_keys", "revoke_join_key"]


@handle_errors
def create_join_key(
    uses: Annotated[
        int,
        typer.Option("--uses", min=1, max=10_000, help="How many machines may join with it."),
    ] = 1,
    ttl: Annotated[
        str,
        typer.Option(
            "--ttl", help="How long it is valid: 1h, 90m, 3600s, 7d (1 minute to 90 days)."
        ),
    ] = "24h",
    max_gpus: Annotated[
        int | None,
        typer.Option(
            "--max-gpus",
            min=1,
            help="The most GPUs a machine joining with it may declare (default: any).",
            show_default=False,
        ),
    ] = None,
    vendor: Annotated[
        str | None,
        typer.Option(
            "--vendor", help="Only GPUs of this vendor (nvidia or amd).", show_default=False
        ),
    ] = None,
    description: Annotated[
        str, typer.Option("--description", help="What the key is for (shown in the list).")
    ] = "",
    json_output: JsonFlag = False,
) -> None:
    """Create a join key and print the command that joins a GPU machine with it (admins only).

    The key is shown this once (only its hash is kept): run the printed command, as root, on
    the machine that joins. A key joins at most --uses machines and expires after --ttl;
    `gridweave admin join-key revoke` stops it sooner.

    Examples:

        gridweave admin join-key create --uses 1 --ttl 1h

        gridweave admin join-key create --uses 4 --ttl 7d --description "rack 4" --json
    """
    ttl_seconds = seconds_of(ttl, param_hint="--ttl")
    gpu_vendor = None if vendor is None else _vendor(vendor)
    with platform_client() as client:
        created = client.create_join_key(
            ttl_seconds=ttl_seconds,
            max_uses=uses,
            max_gpus=max_gpus,
            vendor=gpu_vendor,
            description=description,
        )
    if json_output:
        emit_json(created.model_dump(mode="json"))
        return
    plural = "" if created.max_uses == 1 else "s"
    stderr().print(
        f"Join key {created.id}: {created.max_uses} machine{plural}, "
        f"expires {_when(created.expires_at)}. It is shown this once."
    )
    stdout().print(f"key: {escape(created.key)}", soft_wrap=True)
    stderr().print("On the GPU machine, as root, run:")
    stdout().print(escape(created.join_command), soft_wrap=True)


@handle_errors
def join_keys(json_output: JsonFlag = False) -> None:
    """List the join keys, newest first: when made, when they expire, machines joined of the
    limit, revoked or not (admins only; the keys themselves are never shown again).

    Examples:

        gridweave admin join-keys

        gridweave admin join-keys --json
    """
    with platform_client() as client:
        listed = client.list_join_keys()
    if json_output:
        emit_json(listed.model_dump(mode="json"))
        return
    if not listed.join_keys:
        stdout().print("No join keys.")
        return
    table = Table("id", "created", "expires", "uses", "state", "description", box=None)
    now = datetime.now(UTC)
    for key in listed.join_keys:
        table.add_row(
            key.id,
            _when(key.created_at),
            _when(key.expires_at),
            f"{key.uses}/{key.max_uses}",
            _state(key, now),
            escape(key.description),
        )
    stdout().print(table)


@handle_errors
def revoke_join_key(
    key_id: Annotated[
        str, typer.Argument(help="The key's id (jk_..., from join-keys).", show_default=False)
    ],
    json_output: JsonFlag = False,
) -> None:
    """Revoke a join key: no machine joins with it any more; machines that joined stay
    (admins only; revoking again changes nothing).

    Examples:

        gridweave admin join-key revoke jk_0123456789abcdef
    """
    with platform_client() as client:
        revoked = client.revoke_join_key(key_id)
    if json_output:
        emit_json(revoked.model_dump(mode="json"))
        return
    when = "" if revoked.revoked_at is None else f" at {_when(revoked.revoked_at)}"
    stdout().print(f"{revoked.id} revoked{when}")


def _vendor(text: str) -> GpuVendor:
    for vendor in GPU_VENDORS:
        if vendor == text:
            return vendor
    raise typer.BadParameter(f"{text!r}: expected nvidia or amd", param_hint="--vendor")


def _when(moment: datetime) -> str:
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"


def _state(key: JoinKeyResponse, now: datetime) -> str:
    if key.revoked_at is not None:
        return "[red]revoked[/]"
    if key.expires_at <= now:
        return "[yellow]expired[/]"
    if key.uses >= key.max_uses:
        return "used up"
    return "[green]valid[/]"
