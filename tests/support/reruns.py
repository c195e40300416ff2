"""Pytest plugin: a pass's failed tests written down, and run once more by themselves.

``make pytest``'s passes run on a machine they load: the second on three workers, the first
beside the platforms its tests start. A deadline that holds on a quiet machine can be
missed there. ``tools/test-suite`` therefore runs a pass's failures again, in one process
and with nothing else running; a failure that is the code's fails again and fails the run.
What passed only the second time is printed as such, so it stays in sight.

- ``GW_TEST_FAILED_FILE=<path>``: the session writes the ids of its failed tests there, one
  per line (an error in a fixture counts), an empty file when none failed. Under xdist the
  controller writes it, the ids without their ``@<group>`` suffix (``parallel.py``).
- ``GW_TEST_RERUN_FILE=<path>``: the session runs only the tests whose ids are listed
  there (the others are deselected).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.parallel import RAY_GROUP

__all__ = ["plain_id"]

_FAILED_FILE = "GW_TEST_FAILED_FILE"
_RERUN_FILE = "GW_TEST_RERUN_FILE"
_failed: dict[str, None] = {}  # ordered, each id once


def plain_id(node_id: str) -> str:
    """``node_id`` without the ``@<group>`` an xdist worker's id ends in (``parallel.py``):
    the group is ``ray-world`` or the test's module, so an ``@`` of the test's own stays.

    A parametrized test's report comes back as ``...[params]@<group>]``: pytest 9.2 reads
    everything after the first ``[`` as the parameters and writes them back in brackets.
    """
    head, at, group = node_id.rpartition("@")
    if not at:
        return node_id
    if group.endswith("]") and head.endswith("]"):
        group = group[:-1]
    return head if group in (RAY_GROUP, node_id.partition("::")[0]) else node_id


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed:
        _failed[plain_id(report.nodeid)] = None


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = os.environ.get(_FAILED_FILE)
    if target and not hasattr(session.config, "workerinput"):  # the controller, or alone
        Path(target).write_text("".join(f"{node_id}\n" for node_id in _failed))


@pytest.hookimpl(trylast=True)  # after parallel.py has given each item its id
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    listed = os.environ.get(_RERUN_FILE)
    if not listed:
        return
    wanted = set(Path(listed).read_text().split("\n")) - {""}
    kept = [item for item in items if plain_id(item.nodeid) in wanted]
    dropped = [item for item in items if plain_id(item.nodeid) not in wanted]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
