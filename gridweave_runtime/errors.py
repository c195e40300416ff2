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
bad field, ``{"field": "amount", "message": "..."}``. The answer never grows with the input:
at most ``max_fields`` items (the rest counted in ``more_fields``), each field name and
message cut to a few hundred characters. Anything unexpected answers a bare 500 without
internals. ``gridweave_clients`` decodes these bodies into its own exceptions.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

__all__ = [
    "MAX_ERROR_FIELDS",
    "GridweaveError",
    "InvalidRequest",
    "error_body",
    "install_error_handlers",
]

_logger = logging.getLogger("gridweave")

#: The most bad fields one 422 lists by default (``<PREFIX>_MAX_ERROR_FIELDS``).
MAX_ERROR_FIELDS = 20
# A field name or message longer than this is cut: a 1 MB unknown key is not echoed back.
_MAX_TEXT = 200


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

    def __init__(
        self,
        field: str,
        message: str,
        *,
        more: Sequence[Mapping[str, str]] = (),
        more_fields: int = 0,
    ) -> None:
        self.fields = [{"field": field, "message": message}]
        self.fields += [{"field": item["field"], "message": item["message"]} for item in more]
        names = ", ".join(item["field"] for item in self.fields)
        details: dict[str, Any] = {"fields": self.fields}
        if more_fields:
            names += f" and {more_fields} more"
            details["more_fields"] = more_fields
        super().__init__(f"invalid fields: {names}", **details)

    @classmethod
    def of_fields(
        cls,
        fields: Sequence[Mapping[str, str]],
        *,
        limit: int = MAX_ERROR_FIELDS,
        total: int | None = None,
    ) -> InvalidRequest:
        """Several bad fields at once (a request the schema refused); at least one.

        At most ``limit`` are listed; ``more_fields`` counts the others of ``total`` (by
        default, of ``fields``).
        """
        first, *rest = fields[:limit]
        listed = 1 + len(rest)
        more = max((len(fields) if total is None else total) - listed, 0)
        return cls(first["field"], first["message"], more=rest, more_fields=more)


def error_body(code: str, message: str, **details: Any) -> dict[str, Any]:
    """The JSON body every error response carries."""
    return {"error": {"code": code, "message": message, **details}}


def _cut(text: str) -> str:
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."


def _field_name(location: Sequence[Any]) -> str:
    # ("body", "amount") -> "amount"; ("query", "limit") -> "limit"; ("body",) -> "body"
    parts = [str(part) for part in location]
    if len(parts) > 1 and parts[0] in {"body", "query", "path", "header", "cookie"}:
        parts = parts[1:]
    return _cut(".".join(part or '""' for part in parts))  # an empty key is still named


def _validation_fields(errors: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    return [
        {
            "field": _field_name(error.get("loc", ())),
            "message": _cut(str(error.get("msg", "invalid"))),
        }
        for error in errors
    ]


def install_error_handlers(app: FastAPI, *, max_fields: int = MAX_ERROR_FIELDS) -> None:
    """Map GridweaveError, validation errors, HTTP errors and the unexpected to JSON, once.

    A 422 lists at most ``max_fields`` bad fields.
    """

    async def on_gridweave_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, GridweaveError)
        return JSONResponse(
            error_body(exc.code, exc.message, **exc.details), status_code=exc.status_code
        )

    async def on_validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        errors = exc.errors()
        listed = _validation_fields(errors[:max_fields])
        error = InvalidRequest.of_fields(listed, limit=max_fields, total=len(errors))
        return await on_gridweave_error(request, error)

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
