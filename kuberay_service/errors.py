"""Every error kuberay-service answers is a Kubernetes ``Status`` body: mapped once, here.

Controller errors keep their reason (``NotFound``, ``AlreadyExists``, ``Conflict``,
``Invalid``, ``InvalidTransition``...), so the proxied client (``job_gateway.crd_client``)
turns each body back into the very same exception class with
:func:`gridweave_controller.errors.error_from_status`. Auth failures, unknown routes and
methods get a Status too, with the HTTP reason phrase as ``reason`` (``Unauthorized``,
``MethodNotAllowed``).

The node registry's refusals are :class:`NodeRegistryError` subclasses (``GridweaveError``
with a Status ``reason`` of their own)::

    NodeRegistryError
    ├── UnknownJoinKey       401 JoinKeyUnknown
    ├── JoinKeyExpired       403 JoinKeyExpired
    ├── JoinKeyRevoked       403 JoinKeyRevoked
    ├── JoinKeyUsedUp        403 JoinKeyUsedUp
    ├── JoinKeyLimit         403 JoinKeyLimit       (GPU count or vendor; ``field`` named)
    ├── UnknownNodeToken     401 NodeTokenUnknown
    ├── NodeConflict         409 NodeConflict       (hostname or WireGuard key taken)
    ├── NodeNotRegistered    409 NodeNotRegistered  (a heartbeat before register)
    ├── VpnPoolExhausted     409 VpnPoolExhausted
    ├── NodeNotFound         404 NotFound
    ├── JoinKeyNotFound      404 NotFound
    ├── ValidationRateLimited 429 TooManyRequests   (``retryAfterSeconds``)
    └── MeshNotConfigured    503 MeshNotConfigured  (a ``KUBERAY_`` setting unset)

A ``GridweaveError`` naming fields (``InvalidRequest``, ``JoinKeyLimit``) lists them as the
Status' ``details.causes``, like a request the schema refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from gridweave_controller.errors import CrdError, TransportError, status_body
from gridweave_runtime.errors import MAX_ERROR_FIELDS, GridweaveError, InvalidRequest

__all__ = [
    "JoinKeyExpired",
    "JoinKeyLimit",
    "JoinKeyNotFound",
    "JoinKeyRevoked",
    "JoinKeyUsedUp",
    "MeshNotConfigured",
    "NodeConflict",
    "NodeNotFound",
    "NodeNotRegistered",
    "NodeRegistryError",
    "UnknownJoinKey",
    "UnknownNodeToken",
    "ValidationRateLimited",
    "VpnPoolExhausted",
    "install_status_error_handlers",
    "invalid_status",
    "status_of",
    "status_response",
]


class NodeRegistryError(GridweaveError):
    """A refusal of the node registry; ``reason`` is the Status reason it answers."""

    reason = "BadRequest"
    status_code = 400


class UnknownJoinKey(NodeRegistryError):
    code, reason, status_code = "join_key_unknown", "JoinKeyUnknown", 401
    message = "join key refused: no such join key"


class JoinKeyExpired(NodeRegistryError):
    code, reason, status_code = "join_key_expired", "JoinKeyExpired", 403
    message = "join key refused: it has expired"


class JoinKeyRevoked(NodeRegistryError):
    code, reason, status_code = "join_key_revoked", "JoinKeyRevoked", 403
    message = "join key refused: it was revoked"


class JoinKeyUsedUp(NodeRegistryError):
    code, reason, status_code = "join_key_used_up", "JoinKeyUsedUp", 403
    message = "join key refused: it is used up"


class JoinKeyLimit(NodeRegistryError):
    """The node breaks a limit of its join key; ``field`` names what."""

    code, reason, status_code = "join_key_limit", "JoinKeyLimit", 403
    message = "join key refused: the node breaks its limits"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"join key refused: {field}: {message}", field=field)
        self.fields = [{"field": field, "message": message}]


class UnknownNodeToken(NodeRegistryError):
    code, reason, status_code = "node_token_unknown", "NodeTokenUnknown", 401
    message = "a valid node token (from /v1/nodes/validate) is required"


class NodeConflict(NodeRegistryError):
    code, reason, status_code = "node_conflict", "NodeConflict", 409
    message = "the node conflicts with a joined one"


class NodeNotRegistered(NodeRegistryError):
    code, reason, status_code = "node_not_registered", "NodeNotRegistered", 409
    message = "the node has not registered yet: POST /v1/nodes/register first"


class VpnPoolExhausted(NodeRegistryError):
    code, reason, status_code = "vpn_pool_exhausted", "VpnPoolExhausted", 409
    message = "the VPN address pool has no free address"


class NodeNotFound(NodeRegistryError):
    code, reason, status_code = "node_not_found", "NotFound", 404
    message = "no such node"


class JoinKeyNotFound(NodeRegistryError):
    code, reason, status_code = "join_key_not_found", "NotFound", 404
    message = "no such join key"


class ValidationRateLimited(NodeRegistryError):
    code, reason, status_code = "rate_limited", "TooManyRequests", 429
    message = "too many validations from this address"


class MeshNotConfigured(NodeRegistryError):
    code, reason, status_code = "mesh_not_configured", "MeshNotConfigured", 503
    message = "the mesh is not configured"


#: A transport failure behind the proxy (apiserver unreachable, 5xx): the gateway is bad.
_TRANSPORT_FAILURE_CODE = 502
# A field name or message longer than this is cut (a 1 MB unknown key is not echoed back).
_MAX_TEXT = 200


def status_of(error: CrdError) -> tuple[int, dict[str, Any]]:
    """The error's HTTP code and Status body."""
    status = error.to_status()
    code = _TRANSPORT_FAILURE_CODE if isinstance(error, TransportError) else error.code
    status["code"] = code
    return code, status


def status_response(error: CrdError) -> JSONResponse:
    """The error as a Status body with its HTTP code."""
    code, status = status_of(error)
    return JSONResponse(status, status_code=code)


def _status(code: int, message: str) -> dict[str, Any]:
    try:
        reason = HTTPStatus(code).phrase.title().replace(" ", "").replace("-", "")
    except ValueError:
        reason = "Unknown"
    return status_body(code, reason, message)


def _cut(text: str) -> str:
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."


def _field(location: Sequence[Any]) -> str:
    parts = [str(part) for part in location]
    if len(parts) > 1 and parts[0] in {"body", "query", "path", "header"}:
        parts = parts[1:]
    return _cut(".".join(part or '""' for part in parts))  # an empty key still shows


def invalid_status(errors: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A 422 Status naming the fields of pydantic's ``errors`` (at most MAX_ERROR_FIELDS)."""
    # at most MAX_ERROR_FIELDS causes, each cut short: the answer never grows with the input
    causes = [
        {
            "reason": "FieldValueInvalid",
            "field": _field(error.get("loc", ())),
            "message": _cut(str(error.get("msg", "invalid"))),
        }
        for error in errors[:MAX_ERROR_FIELDS]
    ]
    summary = "; ".join(f"{cause['field']}: {cause['message']}" for cause in causes)
    if len(errors) > len(causes):
        summary += f"; and {len(errors) - len(causes)} more"
    return status_body(422, "Invalid", f"invalid request: {summary}", {"causes": causes})


def install_status_error_handlers(app: FastAPI) -> None:
    """Answer every error (controller, validation, auth, routing) with a Status body."""

    async def on_crd_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, CrdError)
        return status_response(exc)

    async def on_validation_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return JSONResponse(invalid_status(exc.errors()), status_code=422)

    async def on_service_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, GridweaveError)
        body = _status(exc.status_code, exc.message)
        if isinstance(exc, NodeRegistryError):
            body["reason"] = exc.reason
        if isinstance(exc, InvalidRequest | JoinKeyLimit):
            body["reason"] = "Invalid" if isinstance(exc, InvalidRequest) else exc.reason
            body["details"] = {
                "causes": [
                    {
                        "reason": "FieldValueInvalid",
                        "field": _cut(f["field"]),
                        "message": _cut(f["message"]),
                    }
                    for f in exc.fields[:MAX_ERROR_FIELDS]
                ]
            }
        headers = {}
        if isinstance(exc, ValidationRateLimited):
            retry_after = int(exc.details.get("retry_after_seconds", 1))
            body["details"] = {"retryAfterSeconds": retry_after}
            headers["Retry-After"] = str(retry_after)
        return JSONResponse(body, status_code=exc.status_code, headers=headers)

    async def on_http_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        body = _status(exc.status_code, str(exc.detail))
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)

    app.add_exception_handler(CrdError, on_crd_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(GridweaveError, on_service_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
