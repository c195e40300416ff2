"""Every argument check of the typed operations, run before any request (pure: no I/O).

Object names, labels, user ids, texts, numbers, vendors, placements and condition reasons:
the flows call these before they send anything, so every transport refuses bad input the
same way, naming the parameter.

User ids are free text (an email, an OAuth subject) but label values are at most 63
characters of ``[A-Za-z0-9._-]``, starting and ending alphanumeric. :func:`user_label_value`
keeps a user id that is already a valid label value unchanged; any other id becomes
``<sanitized prefix>-<16 hex digits of its SHA-256>``: readable, stable, and distinct for
distinct ids. The raw id always stays in ``spec.userId``.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast, get_args

from packaging.requirements import InvalidRequirement, Requirement

from gridweave_controller.errors import Invalid
from gridweave_controller.phases import EndpointPhase
from gridweave_controller.vendors import VENDORS

#: A job's container memory (MiB) and CPU (thousandths of a core), as the CRD bounds them.
MIN_MEMORY_MB, MAX_MEMORY_MB = 64, 4_194_304
MIN_CPU_MILLIS, MAX_CPU_MILLIS = 10, 1_024_000
_SHA256 = re.compile(r"[0-9a-f]{64}")
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
#: A repository's full name in the platform's registry: ``<namespace>/<name>[/...]``
#: (unanchored, to build on; ``REPOSITORY_PATTERN`` is the anchored one).
REPOSITORY_NAME = rf"{_COMPONENT}(?:/{_COMPONENT})+"
REPOSITORY_PATTERN = rf"^{REPOSITORY_NAME}$"
#: A job's ``spec.image``: a repository of the platform's registry pinned to its manifest's
#: digest (the platform resolves a tag when the job is submitted, so every attempt and
#: every node runs the same image).
PINNED_IMAGE_PATTERN = rf"^{REPOSITORY_NAME}@sha256:[0-9a-f]{{64}}$"
MAX_IMAGE_LENGTH = 320
_PINNED_IMAGE = re.compile(PINNED_IMAGE_PATTERN)
#: A job's ``spec.pip`` (the CRD's bounds): at most this many requirements, each a PEP 508
#: requirement of a package of the index by name, in printable ASCII, at most this long.
MAX_PIP_REQUIREMENTS, MAX_PIP_REQUIREMENT_LENGTH = 64, 200
PIP_REQUIREMENT_PATTERN = r"^[A-Za-z0-9][ -~]*$"
_PIP_REQUIREMENT = re.compile(PIP_REQUIREMENT_PATTERN)
#: ``gpu_models`` (the CRD's bounds): at most this many GPU model names, each a letter or
#: digit first, then letters, digits, spaces and ``._+-``, at most this long.
MAX_GPU_MODELS, MAX_GPU_MODEL_LENGTH = 8, 100
GPU_MODEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9 ._+-]*$"
_GPU_MODEL = re.compile(GPU_MODEL_PATTERN)

__all__ = [
    "GPU_MODEL_PATTERN",
    "MAX_CPU_MILLIS",
    "MAX_GPU_MODELS",
    "MAX_GPU_MODEL_LENGTH",
    "MAX_IMAGE_LENGTH",
    "MAX_PIP_REQUIREMENTS",
    "MAX_PIP_REQUIREMENT_LENGTH",
    "PIP_REQUIREMENT_PATTERN",
    "PINNED_IMAGE_PATTERN",
    "REPOSITORY_NAME",
    "REPOSITORY_PATTERN",
    "MAX_MEMORY_MB",
    "MIN_CPU_MILLIS",
    "MIN_MEMORY_MB",
    "ENDPOINT_MODES",
    "EndpointMode",
    "MAX_IDLE_SECONDS",
    "MAX_PRIORITY",
    "MIN_PRIORITY",
    "MAX_MESSAGE_LENGTH",
    "MAX_REASON_LENGTH",
    "REASON_PATTERN",
    "USER_LABEL",
    "MAX_CHUNK_ITEMS",
    "MAX_MAP_ITEMS",
    "MAX_MAP_RETRIES",
    "MAX_MAP_WORKERS",
    "check_endpoint_phase",
    "check_map_share",
    "check_endpoint_source",
    "check_gpu_indices",
    "check_gpu_models",
    "check_image",
    "check_int",
    "check_labels",
    "check_message",
    "check_name",
    "check_outcome",
    "check_pip",
    "check_placement",
    "check_reason",
    "check_sha256",
    "check_text",
    "check_vendor",
    "check_wall_seconds",
    "object_labels",
    "pip_requirement_problem",
    "user_label_value",
]

#: ``spec.priority`` bounds (the CRD's): a higher class is always placed first.
MIN_PRIORITY, MAX_PRIORITY = -1000, 1000

#: How an endpoint serves: vLLM's server, Hugging Face transformers, or a user's class.
EndpointMode = Literal["vllm", "transformers", "custom"]
#: An endpoint's ``spec.mode`` values; ``spec.idleSeconds`` at most 30 days (the CRD's).
ENDPOINT_MODES: tuple[EndpointMode, ...] = get_args(EndpointMode)
MAX_IDLE_SECONDS = 2_592_000

#: The label every Gridweave object carries: the sanitized user id (see the module doc).
USER_LABEL = "gridweave.io/user"

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_NOT_LABEL_CHAR = re.compile(r"[^A-Za-z0-9._-]+")
#: The ``metav1.Condition.reason`` pattern (CamelCase, also enforced by the CRD schema).
REASON_PATTERN = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
MAX_REASON_LENGTH = 1024
MAX_MESSAGE_LENGTH = 32768
MAX_NAME_LENGTH = 63
MAX_LABEL_VALUE_LENGTH = 63
_HASH_DIGITS = 16


def check_name(name: str, *, field: str) -> str:
    """Return ``name`` if it is a DNS-1123 label (what job and endpoint ids must be)."""
    if (
        not isinstance(name, str)
        or len(name) > MAX_NAME_LENGTH
        or not _DNS1123_LABEL.fullmatch(name)
    ):
        raise Invalid(
            f"{field} {name!r} is not a DNS-1123 name: at most {MAX_NAME_LENGTH} lower-case "
            "letters, digits or '-', starting and ending with a letter or digit",
            field=field,
        )
    return name


def _check_label_key(key: str, field: str) -> None:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix)):
        raise Invalid(f"{field} key {key!r} has an invalid prefix {prefix!r}", field=field)
    if len(name) > MAX_LABEL_VALUE_LENGTH or not _LABEL_NAME.fullmatch(name):
        raise Invalid(
            f"{field} key {key!r}: the name must be at most 63 characters of letters, digits, "
            "'-', '_' or '.', starting and ending with a letter or digit",
            field=field,
        )


def check_labels(labels: Mapping[str, str] | None, *, field: str = "labels") -> dict[str, str]:
    """Return a copy of ``labels`` if every key and value is valid, else raise Invalid."""
    if labels is None:
        return {}
    result: dict[str, str] = {}
    for key, value in labels.items():
        _check_label_key(key, field)
        if not isinstance(value, str):
            raise Invalid(f"{field}[{key!r}] must be a string", field=f"{field}[{key}]")
        if len(value) > MAX_LABEL_VALUE_LENGTH:
            raise Invalid(
                f"{field}[{key!r}] value is {len(value)} characters long; at most "
                f"{MAX_LABEL_VALUE_LENGTH} are allowed",
                field=f"{field}[{key}]",
            )
        if not _LABEL_VALUE.fullmatch(value):
            raise Invalid(
                f"{field}[{key!r}] value {value!r} has bad characters: use letters, digits, "
                "'-', '_' or '.', starting and ending with a letter or digit",
                field=f"{field}[{key}]",
            )
        result[key] = value
    return result


def user_label_value(user_id: str) -> str:
    """The label value for a user id: unchanged if already valid, else sanitized + hashed."""
    if len(user_id) <= MAX_LABEL_VALUE_LENGTH and _LABEL_VALUE.fullmatch(user_id) and user_id:
        return user_id
    digest = hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:_HASH_DIGITS]
    readable = _NOT_LABEL_CHAR.sub("-", user_id)
    readable = readable[: MAX_LABEL_VALUE_LENGTH - _HASH_DIGITS - 1].strip("-_.")
    return f"{readable}-{digest}" if readable else digest


def check_gpu_indices(gpu_indices: list[int] | tuple[int, ...]) -> list[int]:
    """Return the indices as a list if each is a non-negative int and none repeats."""
    indices = list(gpu_indices)
    if any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in indices):
        raise Invalid("gpu_indices must be non-negative integers", field="gpu_indices")
    if len(set(indices)) != len(indices):
        raise Invalid("gpu_indices must not repeat an index", field="gpu_indices")
    return indices


def check_wall_seconds(wall_seconds: float | None) -> float | None:
    """Return ``wall_seconds`` if it is a finite number >= 0 (or None)."""
    if wall_seconds is None:
        return None
    if (
        isinstance(wall_seconds, bool)
        or not isinstance(wall_seconds, int | float)
        or not math.isfinite(wall_seconds)
        or wall_seconds < 0
    ):
        raise Invalid(
            f"wall_seconds must be a finite number >= 0, not {wall_seconds!r}", field="wall_seconds"
        )
    return float(wall_seconds)


def check_sha256(value: str, *, field: str) -> str:
    """Return ``value`` if it is a SHA-256 digest in lowercase hex."""
    if not isinstance(value, str) or not _SHA256.fullmatch(value):
        raise Invalid(f"{field} must be 64 lowercase hex digits (a SHA-256)", field=field)
    return value


#: A map's bounds: its inputs, their chunks, its workers and the retries of one input.
MAX_MAP_ITEMS, MAX_CHUNK_ITEMS, MAX_MAP_WORKERS, MAX_MAP_RETRIES = 10_000_000, 100_000, 256, 10
_MAP_FIELDS = ("map_id", "worker", "workers", "items", "chunk_items", "retries")


def check_map_share(share: Mapping[str, int | str], *, field: str = "map_share") -> dict[str, Any]:
    """A job's share of a map as the CRD keeps it (``spec.map``, camelCase), each field
    checked: ``map_id`` (a name), ``worker`` of ``workers``, ``items``, ``chunk_items``,
    ``retries``; ``Invalid`` naming the field."""
    if not isinstance(share, Mapping) or set(share) - set(_MAP_FIELDS):
        raise Invalid(f"{field} takes {', '.join(_MAP_FIELDS)}", field=field)
    missing = [name for name in _MAP_FIELDS if name not in share]
    if missing:
        raise Invalid(f"{field} lacks {', '.join(missing)}", field=f"{field}.{missing[0]}")
    map_id = share["map_id"]
    if not isinstance(map_id, str):
        raise Invalid(f"{field}.map_id must be a string", field=f"{field}.map_id")
    check_name(map_id, field=f"{field}.map_id")

    def number(name: str, minimum: int, maximum: int) -> int:
        value = cast(int, share[name])  # check_int refuses anything but an integer
        return check_int(value, field=f"{field}.{name}", minimum=minimum, maximum=maximum)

    workers = number("workers", 1, MAX_MAP_WORKERS)
    return {
        "mapId": map_id,
        "worker": number("worker", 0, workers - 1),
        "workers": workers,
        "items": number("items", 1, MAX_MAP_ITEMS),
        "chunkItems": number("chunk_items", 1, MAX_CHUNK_ITEMS),
        "retries": number("retries", 0, MAX_MAP_RETRIES),
    }


def check_endpoint_phase(value: str, field: str) -> EndpointPhase:
    """The endpoint phase ``value`` names; ``Invalid`` naming ``field`` otherwise."""
    try:
        return EndpointPhase(value)
    except ValueError:
        names = ", ".join(phase.value for phase in EndpointPhase)
        raise Invalid(f"{field} must be one of {names}, not {value!r}", field=field) from None


def check_image(value: str, *, field: str = "image") -> str:
    """Return ``value`` if it is a registry repository pinned to a digest (``repo@sha256:...``)."""
    if (
        not isinstance(value, str)
        or len(value) > MAX_IMAGE_LENGTH
        or not _PINNED_IMAGE.fullmatch(value)
    ):
        raise Invalid(
            f"{field} must name a repository of the platform's registry pinned to its "
            "digest, <namespace>/<name>@sha256:<64 hex digits>",
            field=field,
        )
    return value


def pip_requirement_problem(value: object) -> str | None:
    """Why ``value`` is not a requirement ``pip=`` takes, in words; None when it is one: a
    PEP 508 requirement of a package of the index by name (``numpy==2.1.3``,
    ``requests[socks]>=2; python_version < "3.13"``), never a pip option, a URL or a path."""
    if not isinstance(value, str):
        return f"{value!r} is not a string"
    if len(value) > MAX_PIP_REQUIREMENT_LENGTH:
        return f"{value[:40]!r}... is longer than {MAX_PIP_REQUIREMENT_LENGTH} characters"
    if not _PIP_REQUIREMENT.fullmatch(value):
        return (
            f"{value!r} is not a requirement: it starts with a package's name and holds "
            "printable characters only (no pip option such as --index-url or -e, no path)"
        )
    try:
        requirement = Requirement(value)
    except InvalidRequirement as bad:
        return f"{value!r} is not a PEP 508 requirement: {str(bad).splitlines()[0]}"
    if requirement.url is not None:
        return f"{value!r} names a URL: only packages of the index, by name and version"
    return None


def check_pip(values: Sequence[str], *, field: str = "pip") -> list[str]:
    """Return ``values`` as a list if each is a requirement ``pip=`` takes
    (:func:`pip_requirement_problem`) and there are at most :data:`MAX_PIP_REQUIREMENTS`."""
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise Invalid(f"{field} must be a list of requirements, e.g. ['numpy==2.1.3']", field=field)
    if len(values) > MAX_PIP_REQUIREMENTS:
        raise Invalid(
            f"{field} holds {len(values)} requirements, more than {MAX_PIP_REQUIREMENTS}",
            field=field,
        )
    for value in values:
        problem = pip_requirement_problem(value)
        if problem is not None:
            raise Invalid(f"{field}: {problem}", field=field)
    return list(values)


def check_gpu_models(values: Sequence[str], *, field: str = "gpu_models") -> list[str]:
    """Return ``values`` as a list if it names 1 to :data:`MAX_GPU_MODELS` GPU models, each
    of :data:`GPU_MODEL_PATTERN` and at most :data:`MAX_GPU_MODEL_LENGTH` characters, none
    twice."""
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise Invalid(f"{field} must be a list of GPU models, e.g. ['A100', 'H100']", field=field)
    if not 1 <= len(values) <= MAX_GPU_MODELS:
        raise Invalid(
            f"{field} must name 1 to {MAX_GPU_MODELS} GPU models, not {len(values)}", field=field
        )
    for value in values:
        if (
            not isinstance(value, str)
            or len(value) > MAX_GPU_MODEL_LENGTH
            or not _GPU_MODEL.fullmatch(value)
        ):
            raise Invalid(
                f"{field}: {value!r} is not a GPU model name (letters, digits, spaces and ._+-,"
                f" at most {MAX_GPU_MODEL_LENGTH} characters)",
                field=field,
            )
    if len(set(values)) != len(values):
        raise Invalid(f"{field} names a GPU model twice", field=field)
    return list(values)


def check_text(value: str, *, field: str, max_length: int, required: bool = True) -> str:
    """Return ``value`` if it is a string within the schema's length limits."""
    if not isinstance(value, str):
        raise Invalid(f"{field} must be a string", field=field)
    if required and not value:
        raise Invalid(f"{field} must not be empty", field=field)
    if len(value) > max_length:
        raise Invalid(f"{field} is longer than {max_length} characters", field=field)
    return value


def check_reason(reason: str, *, field: str = "reason") -> str:
    """Return ``reason`` if it is a valid condition reason, else raise Invalid naming it."""
    if len(reason) > MAX_REASON_LENGTH or not REASON_PATTERN.fullmatch(reason):
        raise Invalid(
            f"{field} {reason!r} must be CamelCase: a letter, then letters, digits, '_', ',' "
            f"or ':' (at most {MAX_REASON_LENGTH} characters), e.g. 'NodeLost'",
            field=field,
        )
    return reason


def check_message(message: str, *, field: str = "message") -> str:
    """Return ``message`` if it fits the schema's length limit, else raise Invalid."""
    if len(message) > MAX_MESSAGE_LENGTH:
        raise Invalid(f"{field} is longer than {MAX_MESSAGE_LENGTH} characters", field=field)
    return message


def check_int(value: int, *, field: str, minimum: int, maximum: int | None = None) -> int:
    """An integer in range, else Invalid naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise Invalid(f"{field} must be an integer >= {minimum}, not {value!r}", field=field)
    if maximum is not None and value > maximum:
        raise Invalid(f"{field} must be at most {maximum}, not {value}", field=field)
    return value


def check_endpoint_source(
    mode: str | None,
    *,
    model: str | None,
    image: str | None,
    model_ref: str | None,
    function_ref: str | None,
) -> EndpointMode:
    """The endpoint's mode (given, else ``vllm`` with a model, else ``custom``), checked
    against what it serves: a custom endpoint needs ``function_ref`` or ``image``, the
    others ``model`` or ``model_ref``."""
    if mode is None:
        if all(v is None for v in (model, image, model_ref, function_ref)):
            raise Invalid(
                "one of model, image, model_ref or function_ref is required", field="model"
            )
        mode = "vllm" if (model or model_ref) is not None else "custom"
    for value in ENDPOINT_MODES:
        if mode == value:
            break
    else:
        raise Invalid(
            f"mode must be one of {', '.join(ENDPOINT_MODES)}, not {mode!r}", field="mode"
        )
    if value == "custom" and function_ref is None and image is None:
        raise Invalid(
            "a custom endpoint needs function_ref (a pickled class)", field="function_ref"
        )
    if value != "custom" and model is None and model_ref is None:
        raise Invalid(f"a {value} endpoint needs model or model_ref", field="model")
    return value


def check_vendor(vendor: str) -> str:
    """One of the vendors the CRD allows, else Invalid."""
    if vendor not in VENDORS:
        raise Invalid(f"vendor must be one of {', '.join(VENDORS)}, not {vendor!r}", field="vendor")
    return vendor


def object_labels(user_id: str, labels: Mapping[str, str] | None) -> dict[str, str]:
    """The caller's labels, checked, plus the user label derived from ``user_id``."""
    checked = check_labels(labels)
    if USER_LABEL in checked:
        raise Invalid(
            f"labels may not set {USER_LABEL}: it is derived from user_id", field="labels"
        )
    return {**checked, USER_LABEL: user_label_value(user_id)}


def check_placement(node: str, gpu_indices: Sequence[int]) -> list[int]:
    """A node name and GPU indices, checked; the indices as a list."""
    check_text(node, field="node", max_length=253)
    return check_gpu_indices(list(gpu_indices))


def check_outcome(reason: str, message: str, wall_seconds: float | None) -> None:
    """A terminal move's reason, message and wall time, checked."""
    check_reason(reason)
    check_message(message)
    check_wall_seconds(wall_seconds)
