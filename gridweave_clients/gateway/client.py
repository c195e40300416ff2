"""The blocking and asyncio clients of job_gateway."""

from __future__ import annotations

from gridweave_clients.base import AsyncInternalClient, InternalClient, awaiting, blocking
from gridweave_clients.gateway import operations as ops

__all__ = ["AsyncGatewayClient", "GatewayClient"]


class GatewayClient(InternalClient):
    """job_gateway (port 8200): submit, read, list and cancel jobs; where results are; GPUs."""

    service = "job_gateway"

    submit_job = blocking(ops.submit_job)
    get_job = blocking(ops.get_job)
    list_jobs = blocking(ops.list_jobs)
    cancel_job = blocking(ops.cancel_job)
    get_job_result = blocking(ops.get_job_result)
    get_inventory = blocking(ops.get_inventory)


class AsyncGatewayClient(AsyncInternalClient):
    """job_gateway over asyncio: the methods of :class:`GatewayClient`, awaited."""

    service = "job_gateway"

    submit_job = awaiting(ops.submit_job)
    get_job = awaiting(ops.get_job)
    list_jobs = awaiting(ops.list_jobs)
    cancel_job = awaiting(ops.cancel_job)
    get_job_result = awaiting(ops.get_job_result)
    get_inventory = awaiting(ops.get_inventory)
