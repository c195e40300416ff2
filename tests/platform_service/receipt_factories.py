"""Jobs run to their receipt through the whole stack: platform, gateway, metering, chain.

A job is submitted through the platform, moved to Completed with the CRD client as the
executor would, and the gateway reports its usage to metering, which settles it and
delivers the receipt to chain_service; nothing here writes a receipt itself.
"""

from __future__ import annotations

import time

import httpx

from gridweave_clients.chain.models import SubjectReceiptsResponse
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.factories import PlatformServer, User, submit_body

__all__ = ["RECEIPT_DEADLINE_S", "settled_job", "submitted_job", "wait_receipt"]

#: How long a receipt may take to arrive before a test fails.
RECEIPT_DEADLINE_S = 60.0


def submitted_job(platform: PlatformServer, user: User) -> str:
    """A job of ``user`` submitted through the platform, still Pending."""
    response = platform.http.post("/v1/jobs", json=submit_body(), headers=user.headers)
    assert response.status_code == 201, response.text
    job_id: str = response.json()["job_id"]
    return job_id


def wait_receipt(chain: httpx.Client, job_id: str) -> None:
    """Until chain_service holds the receipt of ``job_id``."""
    deadline = time.monotonic() + RECEIPT_DEADLINE_S
    while True:
        response = chain.get("/v1/receipts", params={"subject_id": job_id})
        assert response.status_code == 200, response.text
        if SubjectReceiptsResponse.model_validate_json(response.content).receipts:
            return
        assert time.monotonic() < deadline, f"no receipt for {job_id}"
        time.sleep(0.05)


def settled_job(
    platform: PlatformServer, gateway: GatewayServer, chain: httpx.Client, user: User
) -> str:
    """A job of ``user`` that ran 2.5 s on gpu-b and completed; its receipt is written."""
    job_id = submitted_job(platform, user)
    gateway.crd.set_job_allocated(job_id, "gpu-b", [0])
    gateway.crd.set_job_running(job_id)
    gateway.crd.set_job_completed(job_id, 2.5)
    wait_receipt(chain, job_id)
    return job_id
