"""Every error kuberay-service answers is a Kubernetes ``Status`` body: mapped once, here.

Controller errors keep their reason (``NotFound``, ``AlreadyExists``, ``Conflict``,
``Invalid``, ``InvalidTransition``...), so the proxied client (``job_gateway.crd_client``)
turns each body back into the very same exception class with
:func:`gridweave_controller.errors.error_from_status`. Auth failures, unknown routes and
methods get a Status too, with the HTTP reason phrase as ``reason`` (``Unauthorized``,
``MethodNotAllowed``).
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
from gridweave_runtime.errors import MAX_ERROR_FIELDS, GridweaveError

__all__ = ["install_status_error_handlers", "status_response"]

#: A transport failure behind the proxy (apiserver unreachable, 5xx): the gateway is bad.
_TRANSPORT_FAILURE_CODE = 502
# A field name or message longer than this is cut (a 1 MB unknown key is not echoed back).
_MAX_TEXT = 200


def status_response(error: CrdError) -> JSONResponse:
    """The error as a Status body with its HTTP code."""
    status = error.to_status()
    code = _TRANSPORT_FAILURE_CODE if isinstance(error, TransportError) else error.code
    status["code"] = code
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


def _invalid_status(errors: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
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
        return JSONResponse(_invalid_status(exc.errors()), status_code=422)

    async def on_service_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, GridweaveError)
        body = _status(exc.status_code, exc.message)
        return JSONResponse(body, status_code=exc.status_code)

    async def on_http_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        body = _status(exc.status_code, str(exc.detail))
        return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)

    app.add_exception_handler(CrdError, on_crd_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(GridweaveError, on_service_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
