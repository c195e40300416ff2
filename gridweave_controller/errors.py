"""The one error hierarchy of the Gridweave controller library, shared by every transport.

::

    CrdError                      base class; ``status`` holds the parsed Kubernetes Status
    ├── NotFound                  404, reason NotFound: the object does not exist
    │   └── CRDNotInstalled       404 without a NotFound Status: the resource type is not served
    ├── AlreadyExists             409, reason AlreadyExists: create of an existing name
    ├── Conflict                  409, reason Conflict: stale resourceVersion (retry the RMW),
    │                             or a repeated move with other arguments (another placement)
    ├── Invalid                   422 / 400 or refused before any request: names the field
    │   └── InvalidTransition     an illegal phase move; names the current and the target phase
    ├── WaitTimedOut              ``wait_for_job`` saw none of the wanted phases in time
    ├── Expired                   410, reason Expired or Gone: the resourceVersion a watch
    │                             (or list) starts from was compacted away; list again
    └── TransportError            anything else: network failure, 401/403/5xx, unparsable reply

Errors are mapped from the Status ``reason`` first and the HTTP code second
(:func:`error_from_status`), so every transport (direct, proxied over HTTP, in-memory)
raises exactly the same classes for the same failure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "AlreadyExists",
    "CRDNotInstalled",
    "Conflict",
    "CrdError",
    "Expired",
    "Invalid",
    "InvalidTransition",
    "NotFound",
    "TransportError",
    "WaitTimedOut",
    "error_from_status",
    "parse_status_body",
    "status_body",
]


class CrdError(Exception):
    """Base class of every error the controller library raises."""

    code: int = 500
    default_reason: str = "InternalError"

    def __init__(self, message: str, *, status: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status: dict[str, Any] = dict(status) if status is not None else {}

    def to_status(self) -> dict[str, Any]:
        """The error as a Kubernetes ``Status`` dict (what a proxy sends over the wire)."""
        if self.status:
            return dict(self.status)
        return status_body(self.code, self.default_reason, self.message)


class NotFound(CrdError):
    """The object does not exist."""

    code = 404
    default_reason = "NotFound"


class CRDNotInstalled(NotFound):
    """The apiserver does not serve the Gridweave resource type: the CRD is not installed."""

    default_reason = "CRDNotInstalled"


class AlreadyExists(CrdError):
    """An object with this name already exists."""

    code = 409
    default_reason = "AlreadyExists"


class Conflict(CrdError):
    """Someone else wrote first: a stale ``resourceVersion``, or the object is already in
    the target phase with other arguments (another node, GPUs, URL or wall time)."""

    code = 409
    default_reason = "Conflict"


class Invalid(CrdError):
    """The request is invalid; the message names the field."""

    code = 422
    default_reason = "Invalid"

    def __init__(
        self, message: str, *, field: str | None = None, status: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(message, status=status)
        self.field = field

    def to_status(self) -> dict[str, Any]:
        """The Status, with the field as its first cause so the receiver can name it."""
        status = super().to_status()
        if self.field is not None and _first_cause_field(status) is None:
            cause = {"reason": "FieldValueInvalid", "field": self.field, "message": self.message}
            status["details"] = {**(status.get("details") or {}), "causes": [cause]}
        return status


class InvalidTransition(Invalid):
    """A phase move the phase machine does not allow; names both phases."""

    default_reason = "InvalidTransition"

    def __init__(self, kind: str, name: str, current: str, target: str) -> None:
        super().__init__(
            f"{kind} {name!r} cannot move from phase {current} to {target}",
            field="status.phase",
        )
        self.kind = kind
        self.name = name
        self.current = current
        self.target = target

    def to_status(self) -> dict[str, Any]:
        """The Status a proxy sends; :func:`error_from_status` rebuilds this error from it."""
        status = super().to_status()
        status["details"] = {
            "kind": self.kind,
            "name": self.name,
            "causes": [{"reason": "InvalidTransition", "field": "status.phase"}],
            "currentPhase": self.current,
            "targetPhase": self.target,
        }
        return status


class WaitTimedOut(CrdError, TimeoutError):
    """The object did not reach any of the wanted phases in time."""

    code = 504
    default_reason = "WaitTimedOut"


class Expired(CrdError):
    """The resourceVersion asked for is older than the history the server keeps (HTTP 410)."""

    code = 410
    default_reason = "Expired"


class TransportError(CrdError):
    """The request could not be carried out: network, auth, server error or bad reply."""

    default_reason = "InternalError"


_BY_REASON: dict[str, type[CrdError]] = {
    "NotFound": NotFound,
    "CRDNotInstalled": CRDNotInstalled,
    "AlreadyExists": AlreadyExists,
    "Conflict": Conflict,
    "Invalid": Invalid,
    "InvalidTransition": InvalidTransition,
    "BadRequest": Invalid,
    "WaitTimedOut": WaitTimedOut,
    "Expired": Expired,
    "Gone": Expired,
}

_BY_CODE: dict[int, type[CrdError]] = {
    400: Invalid,
    404: CRDNotInstalled,
    409: Conflict,
    410: Expired,
    422: Invalid,
}


def status_body(
    code: int, reason: str, message: str, details: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A failure as a Kubernetes ``metav1.Status`` body: the one place one is built."""
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        status["details"] = dict(details)
    return status


def parse_status_body(body: bytes | str | None) -> dict[str, Any] | None:
    """Parse an error body (bytes or str) into a Kubernetes ``Status`` dict, or None."""
    if body is None:
        return None
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    if isinstance(parsed, dict) and parsed.get("kind") == "Status":
        return parsed
    return None


def _first_cause_field(status: Mapping[str, Any]) -> str | None:
    details = status.get("details")
    if not isinstance(details, Mapping):
        return None
    causes = details.get("causes")
    if isinstance(causes, list) and causes and isinstance(causes[0], Mapping):
        field = causes[0].get("field")
        return str(field) if field is not None else None
    return None


#: What kube-apiserver answers (as a NotFound Status without a name) for a path no
#: resource type serves; the test apiserver answers a plain "404 page not found" instead.
_UNSERVED_MESSAGE = "the server could not find the requested resource"


def _is_missing_resource_type(status: Mapping[str, Any]) -> bool:
    details = status.get("details")
    named = isinstance(details, Mapping) and bool(details.get("name"))
    return not named and str(status.get("message", "")).startswith(_UNSERVED_MESSAGE)


def error_from_status(
    status: Mapping[str, Any] | None, http_code: int | None = None, *, fallback: str = ""
) -> CrdError:
    """Map a Kubernetes ``Status`` (reason first, HTTP code second) to the matching error.

    A 404 whose body is not a ``NotFound`` Status (the apiserver's plain "404 page not
    found"), or a NotFound Status that names no object and says the server could not find
    the requested resource, means the resource type is not served: :class:`CRDNotInstalled`.
    """
    status_dict = dict(status) if status is not None else {}
    reason = str(status_dict.get("reason") or "")
    code = status_dict.get("code")
    code_int = http_code if http_code is not None else (code if isinstance(code, int) else None)
    message = str(status_dict.get("message") or fallback or reason or f"HTTP {code_int}")
    cls = _BY_REASON.get(reason)
    if cls is NotFound and _is_missing_resource_type(status_dict):
        cls = CRDNotInstalled
    if cls is None and code_int is not None:
        cls = _BY_CODE.get(code_int)
    if cls is None:
        cls = TransportError
    if cls is CRDNotInstalled and not status_dict:
        message = f"the resource type is not served (is the CRD installed?): {message}"
    if cls is InvalidTransition:
        details = status_dict.get("details") or {}
        return InvalidTransition(
            str(details.get("kind", "")),
            str(details.get("name", "")),
            str(details.get("currentPhase", "")),
            str(details.get("targetPhase", "")),
        )
    if issubclass(cls, Invalid):
        return Invalid(message, field=_first_cause_field(status_dict), status=status_dict or None)
    return cls(message, status=status_dict or None)
