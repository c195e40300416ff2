"""The CRD manifests' structural schemas, applied in memory the way the apiserver does.

The in-memory store (``tests/mock_crd.py``) reads its rules from ``k8s/*.yaml`` instead of
restating them: defaults are applied, undeclared fields are pruned, and every violation is
reported as a ``metav1.Status`` cause with the field path the apiserver would use.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

import yaml

from tests.support.kubeapi import CRD_MANIFESTS

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


@dataclass(frozen=True)
class CrdSchema:
    """One served resource: its kind and the v1 openAPIV3Schema."""

    plural: str
    kind: str
    schema: dict[str, Any]
    #: The version's ``selectableFields`` JSON paths (``.spec.userId``).
    selectable_fields: tuple[str, ...] = ()


@cache
def load_schemas() -> dict[str, CrdSchema]:
    """The Gridweave CRDs by plural, read from the manifests."""
    result: dict[str, CrdSchema] = {}
    for path in CRD_MANIFESTS:
        manifest = yaml.safe_load(path.read_text())
        names = manifest["spec"]["names"]
        version = manifest["spec"]["versions"][0]
        result[names["plural"]] = CrdSchema(
            plural=names["plural"],
            kind=names["kind"],
            schema=version["schema"]["openAPIV3Schema"],
            selectable_fields=tuple(f["jsonPath"] for f in version.get("selectableFields", [])),
        )
    return result


def _type_ok(value: Any, expected: str) -> bool:
    if isinstance(value, bool) and expected != "boolean":
        return False
    return isinstance(value, _TYPES[expected])


def normalize(value: Any, schema: dict[str, Any], path: str, causes: list[dict[str, str]]) -> Any:
    """Default, prune and validate ``value``; append a cause per violation."""
    expected = schema.get("type")
    if expected is not None and not _type_ok(value, expected):
        causes.append(_cause("FieldValueTypeInvalid", path, f"must be of type {expected}"))
        return value
    if isinstance(value, dict) and expected == "object":
        if path == "metadata":
            return value
        properties: dict[str, Any] = schema.get("properties", {})
        result: dict[str, Any] = {}
        for key, item in value.items():
            if properties and key not in properties:
                continue  # pruned, as the apiserver does, without an error
            sub = properties.get(key, {})
            result[key] = normalize(item, sub, _join(path, key), causes)
        for key, sub in properties.items():
            if key not in result and "default" in sub:
                result[key] = sub["default"]
        for key in schema.get("required", []):
            if key not in result:
                causes.append(_cause("FieldValueRequired", _join(path, key), "Required value"))
        check_rules(schema, result, path, causes)
        return result
    if isinstance(value, list):
        items = schema.get("items", {})
        result_list = [
            normalize(item, items, f"{path}[{i}]", causes) for i, item in enumerate(value)
        ]
        if schema.get("x-kubernetes-list-type") == "map":
            _check_unique_keys(
                result_list, schema.get("x-kubernetes-list-map-keys", []), path, causes
            )
        if schema.get("x-kubernetes-list-type") == "set":
            _check_unique_items(result_list, path, causes)
        return result_list
    _check_scalar(value, schema, path, causes)
    return value


def check_rules(
    schema: dict[str, Any], value: dict[str, Any], path: str, causes: list[dict[str, str]]
) -> None:
    """Append a cause for each ``x-kubernetes-validations`` rule of ``schema`` that fails."""
    for rule in schema.get("x-kubernetes-validations", []):
        if not _holds(rule["rule"], value):
            field = _join(path, rule.get("fieldPath", "").lstrip("."))
            reason = rule.get("reason", "FieldValueInvalid")
            causes.append(_cause(reason, field, f"Invalid value: {rule['message']}"))


def apply_read_defaults(obj: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Add the defaults of absent top-level fields, as the apiserver does on every read.

    (``status: {default: {phase: Pending}}``: a status the create dropped reads as Pending.)
    """
    for key, sub in schema.get("properties", {}).items():
        if key not in obj and "default" in sub:
            obj[key] = normalize(copy.deepcopy(sub["default"]), sub, key, [])
    return obj


def _check_unique_items(items: list[Any], path: str, causes: list[dict[str, str]]) -> None:
    """A set-list holds each value once."""
    seen: list[Any] = []
    for index, item in enumerate(items):
        if item in seen:
            causes.append(
                _cause("FieldValueDuplicate", f"{path}[{index}]", f"Duplicate value: {item}")
            )
        seen.append(item)


def _check_unique_keys(
    items: list[Any], keys: list[str], path: str, causes: list[dict[str, str]]
) -> None:
    """A list-map holds each key (tuple) once, as the apiserver requires."""
    seen: set[tuple[Any, ...]] = set()
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        key = tuple(item.get(name) for name in keys)
        if key in seen:
            causes.append(_cause("FieldValueDuplicate", f"{path}[{index}]", "Duplicate value"))
        seen.add(key)


def _is_date_time(value: str) -> bool:
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return "T" in value.upper()


def _check_scalar(
    value: Any, schema: dict[str, Any], path: str, causes: list[dict[str, str]]
) -> None:
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(f'"{v}"' for v in schema["enum"])
        causes.append(
            _cause(
                "FieldValueNotSupported",
                path,
                f'Unsupported value: "{value}": supported values: {supported}',
            )
        )
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            causes.append(_cause("FieldValueInvalid", path, "Invalid value: too short"))
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            causes.append(_cause("FieldValueTooLong", path, "Too long"))
        if "pattern" in schema and not re.search(_go_pattern(schema["pattern"]), value):
            causes.append(_cause("FieldValueInvalid", path, f"should match '{schema['pattern']}'"))
        if schema.get("format") == "date-time" and not _is_date_time(value):
            causes.append(_cause("FieldValueInvalid", path, "must be of type date-time"))
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            causes.append(_cause("FieldValueInvalid", path, f"should be >= {schema['minimum']}"))
        if "maximum" in schema and value > schema["maximum"]:
            causes.append(_cause("FieldValueInvalid", path, f"should be <= {schema['maximum']}"))


def _go_pattern(pattern: str) -> str:
    """The apiserver's (RE2) reading of a pattern: a final ``$`` is the end of the text.

    Python's ``$`` also matches before a trailing newline, which the apiserver refuses.
    """
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        return pattern[:-1] + r"\Z"
    return pattern


_NAME_MATCHES = re.compile(r"^self\.metadata\.name\.matches\('([^']*)'\)$")
_HAS = re.compile(r"^(!?)has\(self\.(\w+)\)$")
_COMPARE_TEXT = re.compile(r"^self\.(\w+) (==|!=) '([^']*)'$")
_AT_MOST = re.compile(r"^self\.(\w+) <= self\.(\w+)$")


def _holds(rule: str, value: dict[str, Any]) -> bool:
    """Evaluate the CEL rules the manifests use.

    ``self.metadata.name.matches('<RE2>')`` (CEL's ``matches`` finds the pattern anywhere,
    like ``re.search``), or a disjunction (`` || ``) of ``has(self.a)``, ``!has(self.a)``,
    ``self.a == 'text'``, ``self.a != 'text'`` and ``self.a <= self.b``.
    """
    if match := _NAME_MATCHES.match(rule):
        name = (value.get("metadata") or {}).get("name")
        return isinstance(name, str) and re.search(_go_pattern(match.group(1)), name) is not None
    return any(_term_holds(term.strip(), value, rule) for term in rule.split("||"))


def _term_holds(term: str, value: dict[str, Any], rule: str) -> bool:
    if match := _HAS.match(term):
        return (match.group(2) in value) != bool(match.group(1))
    if match := _COMPARE_TEXT.match(term):
        equal = value.get(match.group(1)) == match.group(3)
        return equal if match.group(2) == "==" else not equal
    if match := _AT_MOST.match(term):
        return bool(value[match.group(1)] <= value[match.group(2)])
    raise NotImplementedError(f"the in-memory store cannot evaluate the CEL rule {rule!r}")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _cause(reason: str, field: str, message: str) -> dict[str, str]:
    return {"reason": reason, "message": message, "field": field}
