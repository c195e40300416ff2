"""Kubernetes field selectors, parsed and matched the way the apiserver does for a CRD.

Grammar (apimachinery's ``fields.ParseSelector``): comma-separated terms, all must hold,
each ``field=value``, ``field==value`` or ``field!=value``; in a value, ``\\``, ``,`` and
``=`` are escaped with a backslash. A CRD answers ``metadata.name``, ``metadata.namespace``
and the fields its version declares in ``selectableFields``; any other field is refused
with "field label not supported".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

Matcher = Callable[[Mapping[str, Any]], bool]

_OPERATORS = ("!=", "==", "=")
_ALWAYS = ("metadata.name", "metadata.namespace")


class FieldSelectorError(ValueError):
    """The selector does not parse, or names a field the resource cannot select on."""


def _split_terms(selector: str) -> list[str]:
    """Split on commas that are not escaped."""
    terms, current, escaped = [], "", False
    for char in selector:
        if escaped:
            current += char
            escaped = False
        elif char == "\\":
            current += char
            escaped = True
        elif char == ",":
            terms.append(current)
            current = ""
        else:
            current += char
    terms.append(current)
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """The leftmost operator splits the term (``!=`` before ``==`` before ``=``)."""
    for index in range(len(term)):
        for operator in _OPERATORS:
            if term.startswith(operator, index):
                return term[:index], operator, term[index + len(operator) :]
    return None


def _unescape(value: str) -> str:
    result, escaped = "", False
    for char in value:
        if escaped:
            if char not in "\\,=":
                raise FieldSelectorError(
                    f"invalid field selector: invalid escape sequence: \\{char}"
                )
            result += char
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in ",=":
            raise FieldSelectorError(
                f"invalid field selector: unescaped character in value: {ord(char)}"
            )
        else:
            result += char
    if escaped:
        raise FieldSelectorError("invalid field selector: invalid escape sequence: \\")
    return result


def _value_at(obj: Mapping[str, Any], path: str) -> str:
    """The field's value as the apiserver compares it: a string, empty when absent."""
    current: Any = obj
    for key in path.split("."):
        current = current.get(key) if isinstance(current, Mapping) else None
    if current is None:
        return ""
    if isinstance(current, bool):
        return "true" if current else "false"
    return str(current)


def parse_field_selector(selector: str | None, selectable: Iterable[str]) -> Matcher:
    """A matcher for ``selector`` on a resource whose selectable fields are ``selectable``.

    ``selectable`` holds JSON paths as a CRD declares them (``.spec.userId``).
    """
    allowed = set(_ALWAYS) | {path.lstrip(".") for path in selectable}
    terms: list[tuple[str, bool, str]] = []
    for term in sorted(_split_terms(selector or "")):
        if not term:
            continue
        split = _split_term(term)
        if split is None:
            raise FieldSelectorError(f"invalid selector: '{selector}'; can't understand '{term}'")
        field, operator, raw_value = split
        terms.append((field, operator != "!=", _unescape(raw_value)))
    for field, _, _ in terms:
        if field not in allowed:
            raise FieldSelectorError(f"field label not supported: {field}")

    def matches(obj: Mapping[str, Any]) -> bool:
        return all((_value_at(obj, field) == value) == equal for field, equal, value in terms)

    return matches
