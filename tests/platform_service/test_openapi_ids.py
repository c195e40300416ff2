"""Every platform route has a stable operation id: its function's name, unique."""

from __future__ import annotations

import re

import pytest
from fastapi import APIRouter

from platform_service.openapi import apply_operation_ids, offline_document


def test_every_operation_is_named_after_its_function() -> None:
    document = offline_document()
    ids = [
        operation["operationId"]
        for methods in document["paths"].values()
        for operation in methods.values()
    ]
    assert len(ids) == len(set(ids)) and len(ids) > 20
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", name) for name in ids), ids
    assert not [name for name in ids if "_v1_" in name]  # FastAPI's path-derived default
    jobs = document["paths"]["/v1/jobs"]
    assert (jobs["get"]["operationId"], jobs["post"]["operationId"]) == ("list_jobs", "submit_job")
    assert document["paths"]["/v1/sessions"]["post"]["security"] == []


def test_two_routes_of_one_name_are_refused() -> None:
    first, second = APIRouter(), APIRouter()

    @first.get("/a")
    def same() -> None: ...

    @second.get("/b")
    def same_again() -> None: ...

    same_again_route = second.routes[0]
    same_again_route.name = "same"  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="'same'"):
        apply_operation_ids([first, second])
