"""The Python packages a job asks its node to install (``pip=[...]``), as requests carry them.

Each is a PEP 508 requirement of a package of the index by name (``numpy==2.1.3``,
``requests[socks]>=2``), checked by :func:`gridweave_controller.validation.pip_requirement_problem`
on every hop: never a pip option (``--index-url``, ``-e``), a URL or a path, so what a
node installs is only ever named packages of the index it is configured with.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from gridweave_controller.validation import (
    MAX_PIP_REQUIREMENT_LENGTH,
    MAX_PIP_REQUIREMENTS,
    pip_requirement_problem,
)

__all__ = ["PipRequirement", "PipRequirements", "check_requirements"]


def _requirement(value: str) -> str:
    problem = pip_requirement_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def check_requirements(values: object) -> tuple[str, ...]:
    """``values`` as a tuple if it is a list of requirements ``pip=`` takes; ``ValueError``
    saying what is wrong otherwise."""
    if isinstance(values, str | bytes) or not isinstance(values, list | tuple):
        raise ValueError("must be a list of requirements, e.g. ['numpy==2.1.3']")
    if len(values) > MAX_PIP_REQUIREMENTS:
        raise ValueError(f"holds {len(values)} requirements, more than {MAX_PIP_REQUIREMENTS}")
    return tuple(_requirement(value) for value in values)


#: One requirement as a request names it; a bad one is refused saying why.
PipRequirement = Annotated[
    str,
    Field(min_length=1, max_length=MAX_PIP_REQUIREMENT_LENGTH),
    AfterValidator(_requirement),
]
PipRequirements = Annotated[
    list[PipRequirement],
    Field(
        max_length=MAX_PIP_REQUIREMENTS,
        description=(
            "PEP 508 requirements of packages of the index by name (no pip option, URL or "
            "path), e.g. numpy==2.1.3, installed on the node into an environment of their own "
            "before the function runs (built once per node, image and list)."
        ),
    ),
]
