"""``gridweave receipt JOB`` on an anchored receipt: the whole stack with chain_service
anchoring each batch in a real single-node CometBFT (CHAIN_ENABLED); the command checks the
transaction, its inclusion in the block's data hash, the block and the commit signatures
against the validators of the node's genesis, and names the step a forged anchor breaks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from chain_service.node import LocalNode
from chain_service.signing import SigningKey, load_signing_key
from gridweave_cli.exit_codes import ExitCode
from tests.chain_service.factories import (
    chain_settings,
    running_chain,
    seal,
    tampering,
    wait_anchored,
)
from tests.cli.helpers import Invoke, as_user, json_of
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.factories import PlatformServer, User
from tests.platform_service.receipt_factories import RECEIPT_DEADLINE_S, settled_job
from tests.support.cometbft import single_node, started_or_skip
from tests.support.credit_server import CreditServer

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]


@pytest.fixture
def alice(platform: PlatformServer, credit: CreditServer, monkeypatch: pytest.MonkeyPatch) -> User:
    """A funded user, the CLI's user."""
    user = platform.new_user()
    credit.fund(user.user_id, 10**9)
    as_user(monkeypatch, platform, user)
    return user


@pytest.fixture(scope="module")
def signing_key_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where chain_service's key is kept."""
    return tmp_path_factory.mktemp("signing") / "signing.pem"


@pytest.fixture(scope="module")
def signing_key(signing_key_file: Path) -> SigningKey:
    """chain_service's key, made before the node that must trust it."""
    return load_signing_key(signing_key_file)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory, signing_key: SigningKey) -> Iterator[LocalNode]:
    """A real single-node CometBFT trusting ``signing_key``."""
    home = tmp_path_factory.mktemp("node")
    with started_or_skip(single_node(home, signing_key.public_key_hex)) as started:
        yield started


@pytest.fixture(scope="module")
def chain(
    chain_database: str,
    node: LocalNode,
    signing_key_file: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[httpx.Client]:
    """chain_service anchoring every sealed batch in ``node`` (replaces the stack's)."""
    settings = chain_settings(
        chain_database,
        tmp_path_factory.mktemp("chain"),
        signing_key_file=signing_key_file,
        enabled=True,
        cometbft_rpc_url=node.rpc_url,
    )
    with running_chain(settings) as client:
        yield client


def _anchored_job(
    platform: PlatformServer,
    gateway: GatewayServer,
    chain: httpx.Client,
    user: User,
) -> str:
    job_id = settled_job(platform, gateway, chain, user)
    wait_anchored(chain, seal(chain).batch_id, timeout_s=RECEIPT_DEADLINE_S)
    return job_id


def test_every_step_to_the_commit_signatures_passes(
    platform: PlatformServer,
    gateway: GatewayServer,
    chain: httpx.Client,
    node: LocalNode,
    signing_key: SigningKey,
    alice: User,
    gridweave: Invoke,
) -> None:
    job_id = _anchored_job(platform, gateway, chain, alice)
    trusted = (
        "--public-key",
        signing_key.public_key_hex,
        "--validators",
        str(node.home / "config" / "genesis.json"),
    )

    result = gridweave("receipt", job_id, *trusted)
    body = json_of(gridweave("receipt", job_id, "--json", *trusted))

    assert result.exit_code == 0, result.output
    marks = [line.split(":")[0] for line in result.stdout.splitlines() if line[:1] in "✓✗"]
    assert marks == [
        "✓ hash chain",
        "✓ Merkle inclusion",
        "✓ batch signature",
        "✓ anchor transaction",
        "✓ transaction inclusion",
        "✓ block",
        "✓ commit signatures",
    ]
    assert "anchored at height" in result.stdout.splitlines()[0]
    assert "10 of 10 voting power signed" in result.stdout
    assert result.stdout.splitlines()[-1] == "verified"
    assert body["verification"]["ok"] is True
    assert body["receipt"]["batch"]["anchor"]["proof"]["validators"]


def test_a_forged_block_data_hash_names_the_transaction_inclusion_step(
    platform: PlatformServer,
    gateway: GatewayServer,
    chain: httpx.Client,
    chain_database: str,
    alice: User,
    gridweave: Invoke,
) -> None:
    job_id = _anchored_job(platform, gateway, chain, alice)
    with tampering(chain_database) as db:
        db.execute(
            text(
                "UPDATE batches SET anchor_proof = jsonb_set(anchor_proof, "
                "'{signed_header,header,data_hash}', to_jsonb(repeat('A', 64))) "
                "WHERE batch_id = (SELECT max(batch_id) FROM batches)"
            )
        )

    result = gridweave("receipt", job_id)

    assert result.exit_code == ExitCode.FAILED, result.output
    assert "✓ anchor transaction" in result.stdout
    assert "✗ transaction inclusion" in result.stdout
    assert "verification failed at step tx_inclusion: data hash aaaa" in result.stdout


def test_validators_other_than_the_trusted_set_name_the_commit_signatures_step(
    platform: PlatformServer,
    gateway: GatewayServer,
    chain: httpx.Client,
    node: LocalNode,
    alice: User,
    tmp_path: Path,
    gridweave: Invoke,
) -> None:
    job_id = _anchored_job(platform, gateway, chain, alice)
    genesis = json.loads((node.home / "config" / "genesis.json").read_text())
    for validator in genesis["validators"]:
        validator["power"] = str(int(validator["power"]) + 1)
    elsewhere = tmp_path / "other-genesis.json"
    elsewhere.write_text(json.dumps(genesis))

    result = gridweave("receipt", job_id, "--validators", str(elsewhere))

    assert result.exit_code == ExitCode.FAILED, result.output
    assert "verification failed at step commit_signatures" in result.stdout
    assert "the validators are not the trusted set" in result.stdout
