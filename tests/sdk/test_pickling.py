"""What the SDK sends of the user's code (``gridweave._pickling``), loaded in a fresh
interpreter that has the installed packages but not the user's files, as a worker has."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import cloudpickle
import httpx
import pytest

from gridweave._pickling import SOURCES_MARKER, dumps, dumps_program, is_user_module
from job_gateway.sandbox import runner
from tests.support.user_project import FAILING_LINE, user_package

ROOT = Path(__file__).resolve().parents[2]

# Run in a fresh interpreter: load the program with the runner's loader, call it on the
# pickled arguments, print the value's repr or the traceback the runner would report.
_CALL = """
import sys, traceback, cloudpickle
from job_gateway.sandbox.runner import load_program
program = sys.stdin.buffer.read()
size = int(sys.argv[1])
function = load_program(program[:size])
args, kwargs = cloudpickle.loads(program[size:])
try:
    print(repr(function(*args, **kwargs)))
except Exception as error:
    traceback.print_exception(error)
    sys.exit(3)
"""


@pytest.fixture
def funcs(tmp_path: Path) -> Iterator[ModuleType]:
    with user_package(tmp_path / "project") as module:
        yield module


def call_elsewhere(program: bytes, *args: Any) -> subprocess.CompletedProcess[str]:
    """Call the pickled ``program`` in a fresh interpreter without the user's folder."""
    done = subprocess.run(
        [sys.executable, "-c", _CALL, str(len(program))],
        input=program + dumps((args, {})),
        capture_output=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


class TestTheUsersOwnModules:
    def test_a_function_of_a_local_package_of_two_modules_runs_elsewhere(
        self, funcs: ModuleType
    ) -> None:
        done = call_elsewhere(dumps_program(funcs.compute), 2)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "9"  # scaled(2) + SCALE, both from helpers

    def test_cloudpickle_alone_sends_it_by_reference_which_fails_elsewhere(
        self, funcs: ModuleType
    ) -> None:
        done = call_elsewhere(cloudpickle.dumps(funcs.compute), 2)
        assert done.returncode != 0
        assert "No module named 'myproject'" in done.stderr

    def test_an_argument_of_a_local_class_travels_by_value(self, funcs: ModuleType) -> None:
        done = call_elsewhere(dumps_program(funcs.point_norm), funcs.Point(-4))
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "12"

    def test_the_pickling_registry_is_left_as_it_was(self, funcs: ModuleType) -> None:
        before = cloudpickle.list_registry_pickle_by_value()
        dumps_program(funcs.compute)
        assert cloudpickle.list_registry_pickle_by_value() == before

    def test_installed_packages_and_the_standard_library_travel_by_reference(
        self, funcs: ModuleType
    ) -> None:
        assert is_user_module("myproject.funcs") and is_user_module("myproject")
        for name in ("json", "os.path", "httpx", "cloudpickle", "gridweave", "__main__"):
            assert not is_user_module(name), name
        data = dumps((json.dumps, httpx.get))
        assert pickle.loads(data) == (json.dumps, httpx.get)
        assert b"co_code" not in data and len(data) < 200  # names, not code


class TestRemoteTracebacks:
    def test_the_traceback_shows_the_users_file_and_lines(self, funcs: ModuleType) -> None:
        done = call_elsewhere(dumps_program(funcs.fail), 5)
        assert done.returncode == 3
        helpers = Path(str(funcs.__file__)).with_name("helpers.py")
        line = helpers.read_text().splitlines().index(f"    {FAILING_LINE}") + 1
        assert f'File "{helpers}", line {line}, in explode' in done.stderr
        assert FAILING_LINE in done.stderr
        assert "return helpers.explode(x)" in done.stderr
        assert "<dynamic-code>" not in done.stderr
        assert "ValueError: bad value 5: scaled 15" in done.stderr

    def test_the_sources_follow_the_pickle_and_are_its_files_only(self, funcs: ModuleType) -> None:
        program = dumps_program(funcs.fail)
        pickled, _, trailer = program.rpartition(SOURCES_MARKER)
        sources = json.loads(trailer)
        folder = str(Path(str(funcs.__file__)).parent)
        assert sorted(sources) == [f"{folder}/funcs.py", f"{folder}/helpers.py"]
        assert FAILING_LINE in sources[f"{folder}/helpers.py"]
        assert callable(cloudpickle.loads(program))  # pickle ignores the trailer

    def test_a_program_without_sources_loads_as_before(self) -> None:
        runner.register_sources(b"no marker here")
        assert runner.load_program(cloudpickle.dumps(len)) is len
