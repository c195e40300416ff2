"""The base error of every Gridweave service and its one mapping to HTTP.

Tree::

    GridweaveError            code, status_code, message, details
    ├── InvalidRequest        422 invalid_request, ``fields`` (every service's bad field)
    ├── Unauthorized          401 (gridweave_runtime.auth)
    ├── Forbidden             403 (gridweave_runtime.auth)
    └── <each service's errors.py subclasses>

Every error answers ``{"error": {"code": ..., "message": ..., **details}}``. A bad request
field, whether the schema or a service's own rule refused it, is one class,
:class:`InvalidRequest`: 422 with ``code = "invalid_request"`` and ``fields``, one item per
bad field, ``{"field": "amount", "message": "..."}``. Anything unexpected answers a bare 500
without internals. ``gridweave_clients`` decodes these bodies into its own exceptions.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

__all__ = ["GridweaveError", "InvalidRequest", "error_body", "install_error_handlers"]

_logger = logging.getLogger("gridweave")


class GridweaveError(Exception):
    """Base error: subclasses set ``code``, ``status_code`` and a default ``message``."""

    code: str = "error"
    status_code: int = 500
    message: str = "internal error"

    def __init__(self, message: str | None = None, **details: Any) -> None:
        self.message = message or type(self).message
        self.details: dict[str, Any] = details
        super().__init__(self.message)


class InvalidRequest(GridweaveError):
    """A bad request field, named: by the schema or by a rule it cannot express."""

    code = "invalid_request"
    status_code = 422
    message = "invalid request"

    def __init__(self, field: str, message: str, *, more: Sequence[Mapping[str, str]] = ()) -> None:
        self.fields = [{"field": field, "message": message}]
        self.fields += [{"field": item["field"], "message": item["message"]} for item in more]
        names = ", ".join(item["field"] for item in self.fields)
        super().__init__(f"invalid fields: {names}", fields=self.fields)

    @classmethod
    def of_fields(cls, fields: Sequence[Mapping[str, str]]) -> InvalidRequest:
        """Several bad fields at once (a request the schema refused); at least one."""
        first, *rest = fields
        return cls(first["field"], first["message"], more=rest)


def error_body(code: str, message: str, **details: Any) -> dict[str, Any]:
    """The JSON body every error response carries."""
    return {"error": {"code": code, "message": message, **details}}


def _field_name(location: Sequence[Any]) -> str:
    # ("body", "amount") -> "amount"; ("query", "limit") -> "limit"; ("body",) -> "body"
    parts = [str(part) for part in location]
    if len(parts) > 1 and parts[0] in {"body", "query", "path", "header", "cookie"}:
        parts = parts[1:]
    return ".".join(parts)


def _validation_fields(errors: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    return [
        {"field": _field_name(error.get("loc", ())), "message": str(error.get("msg", "invalid"))}
        for error in errors
    ]


def install_error_handlers(app: FastAPI) -> None:
    """Map GridweaveError, validation errors, HTTP errors and the unexpected to JSON, once."""

    async def on_gridweave_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, GridweaveError)
        return JSONResponse(
            error_body(exc.code, exc.message, **exc.details), status_code=exc.status_code
        )

    async def on_validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return await on_gridweave_error(
            request, InvalidRequest.of_fields(_validation_fields(exc.errors()))
        )

    async def on_http_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        return JSONResponse(
            error_body(f"http_{exc.status_code}", str(exc.detail)),
            status_code=exc.status_code,
            headers=exc.headers,
        )

    async def on_unexpected(_: Request, exc: Exception) -> JSONResponse:
        _logger.exception("unhandled error", exc_info=exc)
        return JSONResponse(error_body("internal", "internal error"), status_code=500)

    app.add_exception_handler(GridweaveError, on_gridweave_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    app.add_exception_handler(StarletteHTTPException, on_http_error)
    app.add_exception_handler(Exception, on_unexpected)
