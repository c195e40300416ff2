"""``gridweave admin user-limits USER``: a user's quotas (GPUs, VRAM held at once) and its
weight in the fair share, shown or set."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, TypeVar

import typer
from rich.table import Table

from gridweave_cli._errors import handle_errors
from gridweave_cli._output import JsonFlag, emit_json, mib_text, stdout
from gridweave_cli._platform import platform_client
from gridweave_clients.platform.user_limits import UserLimitsResponse

__all__ = ["parse_vram_mb", "print_limits", "user_limits"]

T = TypeVar("T")
_NONE = "none"
_VRAM = re.compile(r"\s*(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>[a-zA-Z]*)\s*")
_MIB_PER = {"": 1, "m": 1, "mb": 1, "mib": 1, "g": 1024, "gb": 1024, "gib": 1024}
_MIB_PER |= {"t": 1024**2, "tb": 1024**2, "tib": 1024**2}


def parse_vram_mb(text: str) -> int:
    """MiB in ``text`` (``80GiB``, ``8192``, ``8192MiB``; GB reads as GiB, as GPUs are sold)."""
    match = _VRAM.fullmatch(text)
    if match is None or match["unit"].lower() not in _MIB_PER:
        raise ValueError(f"{text!r} is not a VRAM size: expected 80GiB, 40GB or 8192 (MiB)")
    return int(float(match["number"]) * _MIB_PER[match["unit"].lower()])


def _option(text: str | None, current: T | None, parse: Callable[[str], T], hint: str) -> T | None:
    """``current`` unchanged (no option), None (``none``), else ``text`` parsed."""
    if text is None:
        return current
    if text.strip().lower() == _NONE:
        return None
    try:
        return parse(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=hint) from exc


@handle_errors
def user_limits(
    user: Annotated[str, typer.Argument(help="The user's id (usr-...).", show_default=False)],
    max_gpus: Annotated[
        str | None,
        typer.Option(
            "--max-gpus",
            help="GPUs the user's unfinished jobs and endpoints may hold at once; none: no limit.",
            show_default=False,
        ),
    ] = None,
    max_vram: Annotated[
        str | None,
        typer.Option(
            "--max-vram",
            help="VRAM they may hold at once, over all GPUs: 80GiB, 40GB, 8192 (MiB); none: "
            "no limit.",
            show_default=False,
        ),
    ] = None,
    weight: Annotated[
        str | None,
        typer.Option(
            "--weight",
            help="The user's weight in the fair share (above 0; 2 is twice the share of 1); "
            "none: 1.",
            show_default=False,
        ),
    ] = None,
    clear: Annotated[
        bool, typer.Option("--clear", help="Clear every quota and the weight first.")
    ] = False,
    json_output: JsonFlag = False,
) -> None:
    """Show a user's quotas and share weight, or set them (admins only).

    A submission (job, map, endpoint) that would take the user past a quota is refused with
    429 naming it; what is already running is never stopped. The weight decides who is
    placed first when the cluster is full. Options left out keep their value.

    Examples:

        gridweave admin user-limits usr-0123456789abcdef

        gridweave admin user-limits usr-0123456789abcdef --max-gpus 8 --max-vram 320GiB

        gridweave admin user-limits usr-0123456789abcdef --weight 2 --max-gpus none
    """
    changing = clear or any(value is not None for value in (max_gpus, max_vram, weight))
    with platform_client() as client:
        current = client.get_user_limits(user)
        if changing:
            gpus = _option(max_gpus, None if clear else current.max_gpus, int, "--max-gpus")
            vram = _option(
                max_vram, None if clear else current.max_vram_mb, parse_vram_mb, "--max-vram"
            )
            kept = None if clear or current.share_weight_is_default else current.share_weight
            share = _option(weight, kept, float, "--weight")
            current = client.set_user_limits(
                user, max_gpus=gpus, max_vram_mb=vram, share_weight=share
            )
    if json_output:
        emit_json(current.model_dump(mode="json"))
        return
    print_limits(current)


def print_limits(limits: UserLimitsResponse) -> None:
    """A user's quotas and weight as a small table."""
    table = Table(box=None, show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("user", limits.user_id)
    table.add_row("max GPUs", "no limit" if limits.max_gpus is None else str(limits.max_gpus))
    vram = limits.max_vram_mb
    table.add_row("max VRAM", "no limit" if vram is None else mib_text(vram))
    default = " (the default)" if limits.share_weight_is_default else ""
    table.add_row("share weight", f"{limits.share_weight:g}{default}")
    stdout().print(table)
