"""Durations typed on the command line (``--ttl``, ``--timeout``)."""

from __future__ import annotations

import typer

import gridweave as gw

__all__ = ["seconds_of"]


def seconds_of(text: str, *, param_hint: str) -> int:
    """A duration (``1h``, ``90m``, ``3600s``, ``3600``) in whole seconds; else a usage error."""
    try:
        return gw.parse_duration(text, argument=param_hint)
    except gw.ConfigurationError as exc:
        raise typer.BadParameter(str(exc), param_hint=param_hint) from exc
