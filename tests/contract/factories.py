"""Objects with defaults in one place, for the contract suite."""

from __future__ import annotations

import uuid
from typing import Any

from tests.contract.transports import Transport


def new_id(prefix: str = "job") -> str:
    """A fresh DNS-1123 object name."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def make_job(transport: Transport, job_id: str | None = None, **overrides: Any) -> Any:
    """Create a job with sensible defaults; keyword arguments override them."""
    arguments: dict[str, Any] = {"vram_mb": 4096}
    arguments.update(overrides)
    user_id = arguments.pop("user_id", "alice@example.com")
    function_ref = arguments.pop("function_ref", "s3://gridweave/functions/f.pkl")
    return transport.api.create_job(
        new_id() if job_id is None else job_id, user_id, function_ref, **arguments
    )


def make_endpoint(transport: Transport, endpoint_id: str | None = None, **overrides: Any) -> Any:
    """Create an endpoint with sensible defaults; keyword arguments override them."""
    arguments: dict[str, Any] = {"vram_mb": 8192, "model": "meta-llama/Llama-3.1-8B"}
    arguments.update(overrides)
    user_id = arguments.pop("user_id", "alice@example.com")
    return transport.api.create_endpoint(
        new_id("ep") if endpoint_id is None else endpoint_id, user_id, **arguments
    )


def run_job(transport: Transport, **overrides: Any) -> Any:
    """A job moved to Running."""
    job = make_job(transport, **overrides)
    transport.api.set_job_allocated(job.name, "gpu-node-1", [0])
    return transport.api.set_job_running(job.name)
