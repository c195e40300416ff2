"""Every deploy script answers --help (with --dry-run in it) and refuses an unknown argument."""

from __future__ import annotations

import pytest

from tests.deploy.scripts import SCRIPTS, run_script


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_and_unknown_arguments(script: str) -> None:
    shown = run_script(script, "--help")
    wrong = run_script(script, "--bogus")
    assert shown.returncode == 0 and shown.stdout.startswith("Usage: ")
    assert "--dry-run" in shown.stdout
    assert wrong.returncode == 1 and "unknown argument: --bogus" in wrong.stderr
