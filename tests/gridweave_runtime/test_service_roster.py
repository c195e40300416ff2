"""The roster of credentials and the document ``deploy.sh`` makes with it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gridweave_runtime.credentials import load_credentials
from gridweave_runtime.service_roster import (
    SERVICE_ROLES,
    credential_of_role,
    new_service_tokens,
    token_digest,
)

ROSTER = Path(__file__).resolve().parents[2] / "gridweave_runtime" / "service_roster.py"


def _run(*arguments: str) -> subprocess.CompletedProcess[str]:
    # as deploy.sh runs it: a file of the checkout, on a Python with nothing installed
    return subprocess.run(
        [sys.executable, "-I", str(ROSTER), *arguments],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )


def test_the_script_prints_a_document_every_service_accepts() -> None:
    tokens = new_service_tokens()
    assert len(set(tokens.values())) == len(SERVICE_ROLES)
    done = _run(*(f"{name}={token}" for name, token in tokens.items()))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert all(token not in done.stdout for token in tokens.values())  # digests only
    credentials = load_credentials(done.stdout)
    assert len(credentials) == len(SERVICE_ROLES)
    platform = credentials.match(tokens["platform"].encode())
    assert platform is not None and platform.roles == ("platform", "admin")
    metering = credentials.match(tokens["metering"].encode())
    assert metering is not None and metering.roles == ("metering",)
    assert credentials.match(b"no-such-token") is None
    entry = next(e for e in document["credentials"] if e["name"] == "gateway")
    assert entry["sha256"] == token_digest(tokens["gateway"])


@pytest.mark.parametrize("argument", ["billing=t0ken", "metering=", "metering"])
def test_an_unknown_name_or_an_empty_token_is_refused(argument: str) -> None:
    done = _run(argument)
    assert done.returncode == 2
    assert "NAME one of platform" in done.stderr and done.stdout == ""


def test_a_role_names_the_credential_whose_own_it_is() -> None:
    assert credential_of_role("admin") == "operator"  # the platform's is its second
    assert credential_of_role("metering") == "metering"
    with pytest.raises(KeyError):
        credential_of_role("billing")


def test_a_document_naming_one_token_twice_is_refused() -> None:
    twice = {
        "credentials": [
            {"name": name, "sha256": token_digest("same"), "roles": [name]}
            for name in ("metering", "gateway")
        ]
    }
    with pytest.raises(ValueError, match=r"credentials\.1\.sha256"):
        load_credentials(json.dumps(twice))


def test_a_document_in_a_file_is_read_from_its_path(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    path.write_text(
        json.dumps(
            {"credentials": [{"name": "chain", "sha256": token_digest("t"), "roles": ["chain"]}]}
        )
    )
    assert load_credentials(str(path)).match(b"t") is not None
    with pytest.raises(ValueError, match="cannot read"):
        load_credentials(str(tmp_path / "missing.json"))
