"""``gridweave receipt JOB`` against the whole stack: the receipt the stack wrote for a real
settled job is verified step by step; one edited in chain_service's PostgreSQL is caught and
the failing step named. Batches are not anchored here (CHAIN_ENABLED off); the anchored
path is ``test_receipt_anchored.py``."""

from __future__ import annotations

import json

import httpx
import pytest
from sqlalchemy import text

from gridweave_cli.exit_codes import ExitCode
from tests.chain_service.factories import seal, tampering
from tests.cli.helpers import Invoke, as_user, json_of
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.factories import PlatformServer, User
from tests.platform_service.receipt_factories import settled_job, submitted_job
from tests.support.credit_server import CreditServer

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]


@pytest.fixture
def alice(platform: PlatformServer, credit: CreditServer, monkeypatch: pytest.MonkeyPatch) -> User:
    """A funded user, the CLI's user."""
    user = platform.new_user()
    credit.fund(user.user_id, 10**9)
    as_user(monkeypatch, platform, user)
    return user


def _sealed_job(
    platform: PlatformServer, gateway: GatewayServer, chain: httpx.Client, user: User
) -> str:
    job_id = settled_job(platform, gateway, chain, user)
    seal(chain)
    return job_id


class TestVerified:
    def test_every_step_is_checked_and_passes(
        self,
        platform: PlatformServer,
        gateway: GatewayServer,
        chain: httpx.Client,
        alice: User,
        gridweave: Invoke,
    ) -> None:
        job_id = _sealed_job(platform, gateway, chain, alice)

        result = gridweave("receipt", job_id)

        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        assert lines[0].startswith(f"{job_id}: receipt ")
        assert [line[:12] for line in lines if line.startswith(("✓", "✗"))] == [
            "✓ hash chain",
            "✓ Merkle inc",
            "✓ batch sign",
        ]
        assert "is not anchored in CometBFT (not yet, or CHAIN_ENABLED is off)" in result.stdout
        assert lines[-1] == "verified"

    def test_json_prints_the_receipt_and_the_verification(
        self,
        platform: PlatformServer,
        gateway: GatewayServer,
        chain: httpx.Client,
        alice: User,
        gridweave: Invoke,
    ) -> None:
        job_id = _sealed_job(platform, gateway, chain, alice)

        body = json_of(gridweave("receipt", job_id, "--json"))

        assert body["receipt"]["receipt"]["subject_id"] == job_id
        assert body["receipt"]["receipt"]["user_id"] == alice.user_id
        assert body["receipt"]["batch"]["anchor"] is None
        assert body["verification"]["ok"] is True
        assert body["verification"]["failed_step"] is None
        assert [step["step"] for step in body["verification"]["steps"]] == [
            "receipt_hash",
            "merkle_inclusion",
            "batch_signature",
        ]

    def test_a_receipt_not_sealed_yet_has_only_its_hash_checked(
        self,
        platform: PlatformServer,
        gateway: GatewayServer,
        chain: httpx.Client,
        alice: User,
        gridweave: Invoke,
    ) -> None:
        job_id = settled_job(platform, gateway, chain, alice)

        result = gridweave("receipt", job_id)

        assert result.exit_code == 0, result.output
        assert "not in a sealed batch yet" in result.stdout
        seal(chain)  # the next test's batch holds only its own receipts


class TestTampered:
    def test_an_edited_figure_names_the_receipt_hash_step(
        self,
        platform: PlatformServer,
        gateway: GatewayServer,
        chain: httpx.Client,
        chain_database: str,
        alice: User,
        gridweave: Invoke,
    ) -> None:
        job_id = _sealed_job(platform, gateway, chain, alice)
        with tampering(chain_database) as db:
            db.execute(
                text("UPDATE receipts SET cost = 1, charged = 1 WHERE subject_id = :job"),
                {"job": job_id},
            )

        result = gridweave("receipt", job_id)
        as_json = gridweave("receipt", job_id, "--json")

        assert result.exit_code == ExitCode.FAILED, result.output
        assert "✗ hash chain" in result.stdout
        assert "verification failed at step receipt_hash: receipt " in result.stdout
        assert as_json.exit_code == ExitCode.FAILED
        assert json.loads(as_json.stdout)["verification"]["failed_step"] == "receipt_hash"

    def test_an_edited_batch_root_names_the_merkle_inclusion_step(
        self,
        platform: PlatformServer,
        gateway: GatewayServer,
        chain: httpx.Client,
        chain_database: str,
        alice: User,
        gridweave: Invoke,
    ) -> None:
        job_id = _sealed_job(platform, gateway, chain, alice)
        with tampering(chain_database) as db:
            db.execute(
                text(
                    "UPDATE batches SET root = repeat('e', 64) WHERE batch_id = "
                    "(SELECT max(batch_id) FROM batches)"
                )
            )

        result = gridweave("receipt", job_id)

        assert result.exit_code == ExitCode.FAILED, result.output
        assert "✓ hash chain" in result.stdout
        assert "✗ Merkle inclusion" in result.stdout and "✗ batch signature" in result.stdout
        assert "verification failed at step merkle_inclusion" in result.stdout

    def test_a_pinned_key_that_did_not_sign_names_the_signature_step(
        self,
        platform: PlatformServer,
        gateway: GatewayServer,
        chain: httpx.Client,
        alice: User,
        gridweave: Invoke,
    ) -> None:
        job_id = _sealed_job(platform, gateway, chain, alice)

        result = gridweave("receipt", job_id, "--public-key", "ab" * 32)

        assert result.exit_code == ExitCode.FAILED, result.output
        assert "verification failed at step batch_signature" in result.stdout


class TestNoReceipt:
    def test_a_job_not_settled_yet_exits_not_found(
        self,
        platform: PlatformServer,
        alice: User,
        gridweave: Invoke,
    ) -> None:
        job_id = submitted_job(platform, alice)

        result = gridweave("receipt", job_id)

        assert result.exit_code == ExitCode.NOT_FOUND, result.output
        assert "receipt is not written yet" in result.stderr
        assert result.stdout == ""

    def test_another_users_job_exits_not_found(
        self,
        platform: PlatformServer,
        gateway: GatewayServer,
        chain: httpx.Client,
        alice: User,
        gridweave: Invoke,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        job_id = _sealed_job(platform, gateway, chain, alice)
        as_user(monkeypatch, platform, platform.new_user())

        result = gridweave("receipt", job_id)

        assert result.exit_code == ExitCode.NOT_FOUND, result.output
        assert "no such job" in result.stderr

    def test_a_bad_public_key_is_a_usage_error(
        self,
        platform: PlatformServer,
        alice: User,
        gridweave: Invoke,
    ) -> None:
        result = gridweave("receipt", "job-x", "--public-key", "nope")

        assert result.exit_code == ExitCode.USAGE
        assert "--public-key: expected 64 hex digits" in result.stderr


def test_help_shows_examples_the_trust_options_and_json(gridweave: Invoke) -> None:
    result = gridweave("receipt", "--help")

    assert result.exit_code == 0, result.output
    assert "Examples:" in result.stdout and "gridweave receipt job-" in result.stdout
    for option in ("--json", "--public-key", "--validators"):
        assert option in result.stdout
