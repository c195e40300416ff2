"""``tools/test-suite.sh`` on a suite of its own: a test that fails only under the pass is run
again and passes the run, named; one that fails every time fails it; too many failures are
not run again.

The suite is written to a directory of its own with a conftest that loads the two plugins
(``parallel``, ``reruns``); its pytest is this one, with that directory as its only path.
The second pass runs on two xdist workers, so the failures' ids come back through the
controller, each with its ``@<group>`` taken off.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "test-suite.sh"

CONFTEST = """
pytest_plugins = ["tests.support.parallel", "tests.support.reruns"]
"""

#: Fails the first time it runs (the pass), passes after (the rerun): a marker file says which.
FLAKY = """
from pathlib import Path
import pytest

@pytest.mark.parametrize("kind", ["a@b", "plain"])
def test_fails_once(kind):
    seen = Path(__file__).with_name(f".ran-{kind}")
    first = not seen.exists()
    seen.touch()
    assert not first, "the pass's run"

def test_passes():
    pass
"""

#: Each pass has a test of its own, whichever pass the others are in (none: pytest's exit 5).
ALONE = """
import pytest
pytestmark = pytest.mark.alone

def test_alone():
    pass
"""
OTHER = """
def test_other():
    pass
"""

BROKEN = """
def test_always_fails():
    assert False, "the code's"
"""


def _suite(tmp_path: Path, modules: dict[str, str], max_reruns: int) -> tuple[int, str]:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(CONFTEST)
    for name, text in {"test_alone.py": ALONE, "test_other.py": OTHER, **modules}.items():
        (suite / name).write_text(text)
    pytest_command = tmp_path / "pytest"
    pytest_command.write_text(
        f'#!/bin/sh\ncd {suite} && exec {sys.executable} -m pytest -q -p no:randomly "$@"\n'
    )
    pytest_command.chmod(0o755)
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [str(SCRIPT), str(pytest_command), "2", str(max_reruns)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("marked_alone", [False, True], ids=["second-pass", "first-pass"])
def test_a_failure_of_the_pass_alone_passes_the_run_and_is_named(
    tmp_path: Path, marked_alone: bool
) -> None:
    flaky = FLAKY
    if marked_alone:  # the first pass's module
        flaky = "import pytest\npytestmark = pytest.mark.alone\n" + FLAKY
    status, output = _suite(tmp_path, {"test_flaky.py": flaky}, max_reruns=3)
    assert status == 0, output
    assert "2 failed; run again by themselves:" in output
    assert "passed when run again by themselves" in output
    # the ids without the worker's group, the parameter's own "@" kept
    assert "***   test_flaky.py::test_fails_once[a@b]\n" in output
    assert "***   test_flaky.py::test_fails_once[plain]\n" in output


def test_a_failure_that_fails_again_fails_the_run(tmp_path: Path) -> None:
    status, output = _suite(tmp_path, {"test_flaky.py": FLAKY, "test_broken.py": BROKEN}, 3)
    assert status == 1, output
    assert "3 failed; run again by themselves:" in output
    assert "failed again by themselves" in output


def test_more_failures_than_allowed_are_not_run_again(tmp_path: Path) -> None:
    status, output = _suite(tmp_path, {"test_flaky.py": FLAKY}, max_reruns=1)
    assert status == 1, output
    assert "2 failed; more than 1 (or none listed) are not run again" in output
    assert "passed when run again" not in output
