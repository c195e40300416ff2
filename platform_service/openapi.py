"""The platform's OpenAPI document: stable operation ids, the API-key scheme, and a dump.

Every route's ``operation_id`` is its function's name (``list_jobs``, ``cancel_job``), so
the typed clients generated from the document (the dashboard's ``web/src/api/schema.d.ts``)
keep their names when a path or a method changes. :func:`main` prints the document without
a server or a database: ``make web-schema`` turns it into TypeScript, and ``make test``
fails when the committed file is stale.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute

from gridweave_runtime.app import create_service_app
from gridweave_runtime.service_roster import credentials_document
from gridweave_runtime.settings import ServiceSettings

__all__ = ["apply_operation_ids", "document_for", "offline_document"]


def apply_operation_ids(routers: Sequence[APIRouter]) -> None:
    """Name every route's operation after its function (before the routers are included);
    two routes of one name are refused. Idempotent."""
    seen: dict[str, str] = {}
    for router in routers:
        for route in router.routes:
            if not isinstance(route, APIRoute) or not route.include_in_schema:
                continue
            operation_id = route.operation_id or route.name
            where = f"{sorted(route.methods or ())} {route.path}"
            if seen.setdefault(operation_id, where) != where:
                raise ValueError(
                    f"operation id {operation_id!r} names {seen[operation_id]} and {where}"
                )
            route.operation_id = operation_id


def document_for(app: FastAPI) -> dict[str, Any]:
    """``app.openapi()`` with the API-key scheme as every route's default security."""
    document = app.openapi()  # built once and cached by FastAPI; this edit is idempotent
    components = document.setdefault("components", {})
    components.setdefault("securitySchemes", {})["apiKey"] = {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key: gw_live_<key id>_<secret>.",
    }
    document["security"] = [{"apiKey": []}]
    return document


def offline_document(routers: Sequence[APIRouter] | None = None) -> dict[str, Any]:
    """The document of the platform's routes, built without opening a database."""
    if routers is None:
        from platform_service.app import ROUTERS  # the app module imports this one

        routers = ROUTERS
    apply_operation_ids(routers)
    token = "openapi-only"
    settings = ServiceSettings(
        service_token=token, credentials=credentials_document({"platform": token})
    )
    app = create_service_app(service="platform_service", settings=settings, routers=routers)
    return document_for(app)


def main() -> None:
    """Print the document, keys sorted, for the TypeScript generator."""
    json.dump(offline_document(), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
