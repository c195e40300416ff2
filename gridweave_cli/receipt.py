"""``gridweave receipt JOB``: fetch a job's receipt and verify all of it here, step by step.

The platform hands over the receipt with its proof (``GET /v1/receipts/{job}``); every
check runs locally with :mod:`gridweave_clients.chain.verify`: the receipt's hash over its
fields, seq and prev_hash (its link in the hash chain), its Merkle path to the batch root,
chain_service's signature over the batch and, once anchored, the CometBFT transaction, its
inclusion in the block's data hash, the block header and the commit signatures against the
validator set. What is trusted: ``--public-key`` and ``--validators`` when given, else the
key and the validator set the proof names (docs/architecture.md, "Verifying a receipt").
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from gridweave_cli._errors import CliError, handle_errors
from gridweave_cli._help import add_commands
from gridweave_cli._output import JsonFlag, emit_json, stdout
from gridweave_cli._platform import platform_client
from gridweave_cli.exit_codes import ExitCode
from gridweave_clients.chain import Step, Verification, verify_receipt
from gridweave_clients.chain.models import ReceiptProofResponse

__all__ = ["STEP_TITLES", "receipt", "register"]

_PUBLIC_KEY = re.compile(r"[0-9a-f]{64}")
#: What each step proves, as the command prints it.
STEP_TITLES = {
    Step.RECEIPT_HASH: "hash chain: the receipt's hash covers its fields, seq and prev_hash",
    Step.CHAIN_LINK: "hash chain: the receipt follows the one before",
    Step.MERKLE_INCLUSION: "Merkle inclusion: its path leads to the batch root",
    Step.BATCH_ROOT: "batch root: recomputed from all the batch's receipts",
    Step.BATCH_SIGNATURE: "batch signature: chain_service signed the batch root",
    Step.ANCHOR_TX: "anchor transaction: the committed transaction is this batch's",
    Step.TX_INCLUSION: "transaction inclusion: its proof leads to the block's data hash",
    Step.BLOCK_COMMIT: "block: the header hashes to the block id the commit signed",
    Step.COMMIT_SIGNATURES: "commit signatures: over 2/3 of the validators' power signed",
}


def _trusted_validators(path: Path | None) -> list[dict[str, Any]] | None:
    """The validator set in ``path``: a list, or an object with ``validators`` (the
    ``/validators`` answer or a genesis file; a genesis ``power`` reads as ``voting_power``)."""
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CliError(f"--validators: {path} cannot be read: {exc}", ExitCode.USAGE) from exc
    if isinstance(data, dict):
        inner = data.get("result")
        data = (inner if isinstance(inner, dict) else data).get("validators")
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise CliError(f"--validators: {path} holds no list of validators", ExitCode.USAGE)
    return [
        item if "voting_power" in item else {**item, "voting_power": item.get("power", 0)}
        for item in data
    ]


def _notes(proof: ReceiptProofResponse) -> list[str]:
    if proof.batch is None:
        return ["not in a sealed batch yet: only its hash was checked (try again later)"]
    if proof.batch.anchor is None:
        return [
            f"batch {proof.batch.batch_id} is not anchored in CometBFT (not yet, or "
            "CHAIN_ENABLED is off): only chain_service's signature vouches for its root"
        ]
    return []


def _report(job_id: str, proof: ReceiptProofResponse, result: Verification) -> None:
    console = stdout()
    receipt, batch = proof.receipt, proof.batch
    where = f"receipt {receipt.seq}"
    if batch is not None:
        where += f" in batch {batch.batch_id} (receipts {batch.first_seq}..{batch.last_seq})"
        if batch.anchor is not None:
            where += f", anchored at height {batch.anchor.height} of {batch.anchor.chain_id}"
    console.print(f"[bold]{escape(job_id)}[/]: {escape(where)}")
    for outcome in result.steps:
        mark = "[green]✓[/]" if outcome.ok else "[bold red]✗[/]"
        title = STEP_TITLES.get(outcome.step, outcome.step.value)
        console.print(f"{mark} {escape(title)}", soft_wrap=True)
        console.print(f"    [dim]{escape(outcome.detail)}[/]", soft_wrap=True)
    for note in _notes(proof):
        console.print(f"[yellow]note:[/] {escape(note)}", soft_wrap=True)
    failure = result.first_failure
    if failure is None:
        console.print("[bold green]verified[/]")
    else:
        console.print(
            f"[bold red]verification failed at step {failure.step.value}:[/] "
            f"{escape(failure.detail)}",
            soft_wrap=True,
        )


def _as_json(proof: ReceiptProofResponse, result: Verification) -> dict[str, Any]:
    failure = result.first_failure
    return {
        "receipt": proof.model_dump(mode="json"),
        "verification": {
            "ok": result.ok,
            "failed_step": None if failure is None else failure.step.value,
            "steps": [
                {"step": item.step.value, "ok": item.ok, "detail": item.detail}
                for item in result.steps
            ],
        },
    }


@handle_errors
def receipt(
    job_id: Annotated[str, typer.Argument(metavar="JOB", help="The job's id.")],
    json_output: JsonFlag = False,
    public_key: Annotated[
        str | None,
        typer.Option(
            "--public-key",
            help="chain_service's Ed25519 public key (hex) to trust; default: the batch's.",
        ),
    ] = None,
    validators: Annotated[
        Path | None,
        typer.Option(
            "--validators",
            help="JSON file of the CometBFT validators to trust (a genesis or /validators "
            "answer); default: the set the proof names.",
        ),
    ] = None,
) -> None:
    """Fetch a job's receipt and verify it here, step by step: its hash, its Merkle path,
    the batch signature and, once anchored, the CometBFT transaction, block and commit.

    Each step prints with ✓ or ✗; a failure exits 1 naming the step. Pin what you trust
    with --public-key (chain_service's key) and --validators (a genesis file); --json
    prints the receipt and every step's outcome.

    Examples:

        gridweave receipt job-4f2a9c0d1e2b3a4c5d6e

        gridweave receipt JOB --public-key 3b6a...e1 --validators genesis.json --json
    """
    if public_key is not None and not _PUBLIC_KEY.fullmatch(public_key := public_key.lower()):
        raise CliError("--public-key: expected 64 hex digits (a raw Ed25519 key)", ExitCode.USAGE)
    trusted = _trusted_validators(validators)
    with platform_client() as client:
        proof = client.get_receipt(job_id)
    result = verify_receipt(proof, trusted_public_key=public_key, trusted_validators=trusted)
    if json_output:
        emit_json(_as_json(proof, result))
    else:
        _report(job_id, proof, result)
    if not result.ok:
        raise typer.Exit(int(ExitCode.FAILED))


def register(app: typer.Typer) -> None:
    """Add ``receipt`` to the ``gridweave`` application."""
    add_commands(app, receipt)
