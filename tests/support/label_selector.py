"""Kubernetes label selectors, parsed and matched the way the apiserver does.

Grammar (comma-separated requirements, all must hold): ``key=value``, ``key==value``,
``key!=value``, ``key in (a,b)``, ``key notin (a,b)``, ``key`` (exists), ``!key``.
``!=`` and ``notin`` also match objects without the key.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

Requirement = Callable[[Mapping[str, str]], bool]

_SET = re.compile(r"^\s*([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_EQ = re.compile(r"^\s*([^\s!=]+)\s*(==|=|!=)\s*([^\s,]*)\s*$")
_EXISTS = re.compile(r"^\s*(!?)\s*([^\s!=(),]+)\s*$")


class SelectorError(ValueError):
    """The selector does not parse."""


def _split(selector: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p for p in parts if p.strip()]


def _requirement(text: str) -> Requirement:
    if match := _SET.match(text):
        key, op, values_text = match.groups()
        values = {v.strip() for v in values_text.split(",") if v.strip()}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if match := _EQ.match(text):
        key, op, value = match.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if match := _EXISTS.match(text):
        negate, key = match.groups()
        if negate:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise SelectorError(f"unable to parse requirement: {text.strip()!r}")


def parse_selector(selector: str | None) -> Callable[[Mapping[str, str]], bool]:
    """A predicate over an object's labels for the selector (None or empty matches all)."""
    requirements = [_requirement(part) for part in _split(selector or "")]
    return lambda labels: all(req(labels) for req in requirements)
