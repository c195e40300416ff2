"""Sizes ("16GB", "512MiB"), durations ("10m", "90s"), CPU, GPU models, images and pip
requirements as the decorators and ``deploy`` take them."""

from __future__ import annotations

import re
from collections.abc import Sequence

from gridweave.errors import ConfigurationError
from gridweave_clients.images import parse_image
from gridweave_clients.pip import check_requirements
from gridweave_controller.errors import Invalid
from gridweave_controller.validation import check_gpu_models

__all__ = [
    "cores",
    "parse_cpu",
    "parse_duration",
    "parse_gpu_models",
    "parse_image_argument",
    "parse_memory",
    "parse_pip",
    "parse_size",
]

# Decimal units count 1000s, binary ones 1024s; the platform counts VRAM in MiB.
_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}
_DURATION_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_NUMBER = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
_MIB = 1024**2


def parse_size(value: str | int, *, argument: str = "vram") -> int:
    """A size in MiB (rounded up); an int is taken as MiB already.

    Raises:
        ConfigurationError: not a positive size with a known unit; names ``argument``.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        if value <= 0:
            raise ConfigurationError(f"{argument}={value!r}: a size must be positive")
        return value
    match = _NUMBER.match(value) if isinstance(value, str) else None
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _SIZE_UNITS or not unit:
        raise ConfigurationError(
            f"{argument}={value!r}: expected a size such as '16GB', '512MiB' or '16000MB'"
        )
    size = float(match.group(1)) * _SIZE_UNITS[unit]
    mib = -int(-size // _MIB)
    if mib <= 0:
        raise ConfigurationError(f"{argument}={value!r}: a size must be positive")
    return mib


def parse_duration(value: str | int | float, *, argument: str = "timeout") -> int:
    """A duration in whole seconds (rounded up); a number is taken as seconds.

    Raises:
        ConfigurationError: not a positive duration with a known unit; names ``argument``.
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        match = _NUMBER.match(value) if isinstance(value, str) else None
        unit = match.group(2).lower() if match else ""
        if match is None or unit not in _DURATION_UNITS:
            raise ConfigurationError(
                f"{argument}={value!r}: expected a duration such as '90s', '10m' or '1h'"
            )
        seconds = float(match.group(1)) * _DURATION_UNITS[unit]
    whole = -int(-seconds // 1)
    if whole <= 0:
        raise ConfigurationError(f"{argument}={value!r}: a duration must be positive")
    return whole


def parse_image_argument(image: str) -> str:
    """``image`` if it names an image of the platform's registry (``<namespace>/<name>[:tag]``
    or ``...@sha256:<digest>``, no host); ``ConfigurationError`` saying what to write."""
    try:
        parse_image(image)
    except ValueError as bad:
        raise ConfigurationError(f"image: {bad}") from None
    return image


def parse_pip(pip: Sequence[str] | None) -> tuple[str, ...]:
    """``pip=`` as a tuple of requirements; ``ConfigurationError`` naming ``pip`` otherwise."""
    if pip is None:
        return ()
    try:
        return check_requirements(list(pip) if isinstance(pip, list | tuple) else pip)
    except ValueError as bad:
        raise ConfigurationError(f"pip={pip!r}: {bad}") from None


def parse_memory(memory: str | int | None) -> int | None:
    """``memory=`` ("8GB"; an int: MiB) in MiB; None stays None (the node's default)."""
    return None if memory is None else parse_size(memory, argument="memory")


def parse_cpu(cpu: float | None) -> int | None:
    """``cpu=`` cores as thousandths of a core; None stays None (the node's default);
    ``ConfigurationError`` naming ``cpu`` otherwise."""
    if cpu is None:
        return None
    if isinstance(cpu, bool) or not isinstance(cpu, int | float) or not 0.01 <= cpu <= 1024:
        raise ConfigurationError(f"cpu must be a number of cores from 0.01 to 1024, not {cpu!r}")
    return round(cpu * 1000)


def cores(cpu_millis: int | None) -> float | None:
    """Thousandths of a core as the cores ``cpu=`` takes (None stays None)."""
    return None if cpu_millis is None else cpu_millis / 1000


def parse_gpu_models(gpu_model: str | Sequence[str] | None) -> tuple[str, ...]:
    """``gpu_model=`` as a tuple of names (none: any model); ``ConfigurationError`` naming
    it otherwise."""
    if gpu_model is None:
        return ()
    names = [gpu_model] if isinstance(gpu_model, str) else gpu_model
    try:
        return tuple(check_gpu_models(list(names) if isinstance(names, list | tuple) else names))
    except Invalid as bad:
        raise ConfigurationError(f"gpu_model={gpu_model!r}: {bad}") from None
