"""``GET /v1/receipts/{job}`` over real HTTP: the whole stack writes the receipt (platform,
gateway on the real apiserver, metering settling through credit, chain_service on
PostgreSQL), the platform answers it to the job's owner only."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from gridweave_clients import NotFound
from gridweave_clients.chain import Step, verify_receipt
from gridweave_clients.chain.models import ReceiptProofResponse
from gridweave_clients.platform import PlatformClient
from tests.chain_service.factories import seal
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.factories import (
    NOWHERE,
    PlatformServer,
    User,
    platform_settings,
    running_platform,
)
from tests.platform_service.receipt_factories import settled_job, submitted_job
from tests.support.credit_server import CreditServer

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

FUNDS = 10**9


@pytest.fixture
def alice(platform: PlatformServer, credit: CreditServer) -> User:
    """A funded user."""
    user = platform.new_user()
    credit.fund(user.user_id, FUNDS)
    return user


def _receipt(platform: PlatformServer, user: User, job_id: str) -> httpx.Response:
    return platform.http.get(f"/v1/receipts/{job_id}", headers=user.headers)


class TestOwner:
    def test_the_receipt_its_position_and_its_merkle_path_once_sealed(
        self, platform: PlatformServer, gateway: GatewayServer, chain: httpx.Client, alice: User
    ) -> None:
        job_id = settled_job(platform, gateway, chain, alice)

        unsealed = _receipt(platform, alice, job_id)
        assert unsealed.status_code == 200, unsealed.text
        early = ReceiptProofResponse.model_validate_json(unsealed.content)
        assert (early.batch, early.leaf_index, early.merkle_path) == (None, None, [])
        batch = seal(chain)
        with PlatformClient(platform.url, alice.key) as client:
            proof = client.get_receipt(job_id)

        receipt = proof.receipt
        assert (receipt.kind, receipt.subject_id, receipt.hold_reference) == ("job", job_id, job_id)
        assert (receipt.user_id, receipt.node, receipt.billed_seconds) == (
            alice.user_id,
            "gpu-b",
            3,
        )
        assert receipt.charged == receipt.cost > 0
        assert receipt.seq == early.receipt.seq and receipt.hash == early.receipt.hash
        assert proof.batch == batch and receipt.batch_id == batch.batch_id
        assert proof.leaf_index == receipt.seq - batch.first_seq
        assert proof.merkle_path or batch.leaf_count == 1
        result = verify_receipt(proof, trusted_public_key=batch.public_key)
        assert result.ok, result.first_failure
        assert [step.step for step in result.steps] == [
            Step.RECEIPT_HASH,
            Step.MERKLE_INCLUSION,
            Step.BATCH_SIGNATURE,
        ]


class TestNotFound:
    def test_another_users_job_is_answered_like_a_missing_one(
        self, platform: PlatformServer, gateway: GatewayServer, chain: httpx.Client, alice: User
    ) -> None:
        job_id = settled_job(platform, gateway, chain, alice)
        bob = platform.new_user()

        theirs = _receipt(platform, bob, job_id)
        missing = _receipt(platform, bob, "job-00000000000000000000")

        assert theirs.status_code == missing.status_code == 404
        assert theirs.json()["error"] == {
            **missing.json()["error"],
            "id": job_id,
        }
        assert theirs.json()["error"]["resource"] == "job"
        with PlatformClient(platform.url, bob.key) as client, pytest.raises(NotFound):
            client.get_receipt(job_id)

    def test_a_job_not_settled_yet_has_no_receipt_written(
        self, platform: PlatformServer, alice: User
    ) -> None:
        job_id = submitted_job(platform, alice)

        response = _receipt(platform, alice, job_id)

        assert response.status_code == 404
        error = response.json()["error"]
        assert (error["code"], error["resource"], error["id"]) == ("not_found", "receipt", job_id)
        assert "receipt is not written yet" in error["message"]

    def test_a_bad_job_id_is_named(self, platform: PlatformServer, alice: User) -> None:
        response = _receipt(platform, alice, "Not_A_Job")
        assert response.status_code == 422
        assert response.json()["error"]["fields"][0]["field"] == "job_id"


def test_chain_service_down_is_503_naming_it(
    platform_database: str,
    credit: CreditServer,
    gateway: GatewayServer,
    alice: User,
    tmp_path: Path,
) -> None:
    settings = platform_settings(
        platform_database,
        tmp_path,
        credit_service_url=credit.url,
        gateway_url=gateway.url,
        chain_service_url=NOWHERE,
    )
    with running_platform(settings) as without_chain:
        response = without_chain.http.get(f"/v1/receipts/job-{'0' * 20}", headers=alice.headers)

    assert response.status_code == 503
    error = response.json()["error"]
    assert (error["code"], error["service"]) == ("service_unavailable", "chain_service")
    assert error["message"] == "chain_service is unavailable: try again"
