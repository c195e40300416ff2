"""``CHAIN_NICENESS``: chain_service, and the node ``python -m chain_service.node`` starts,
run below the settlement path's priority."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest

from tests.support.credentials import service_auth_env
from tests.support.credit_server import INTERNAL_TOKEN
from tests.support.service_process import service_process, thread_niceness


def _chain_env(database_url: str, state: Path, **extra: str) -> dict[str, str]:
    return {
        "CHAIN_DATABASE_URL": database_url,
        **service_auth_env(INTERNAL_TOKEN),
        "GRIDWEAVE_STATE_DIR": str(state),
        **extra,
    }


class TestChainServiceNiceness:
    @pytest.mark.parametrize(("setting", "expected"), [(None, 10), ("7", 7)])
    def test_every_thread_runs_at_the_setting(
        self, chain_database: str, tmp_path: Path, setting: str | None, expected: int
    ) -> None:
        extra = {} if setting is None else {"CHAIN_NICENESS": setting}
        env = _chain_env(chain_database, tmp_path, **extra)
        with service_process("chain_service", env, prefix="CHAIN_", log=tmp_path / "chain.log") as (
            _,
            process,
        ):
            niceness = thread_niceness(process.pid)
        assert niceness == {max(expected, os.getpriority(os.PRIO_PROCESS, 0))}

    def test_zero_leaves_it_as_started(self, chain_database: str, tmp_path: Path) -> None:
        env = _chain_env(chain_database, tmp_path, CHAIN_NICENESS="0")
        with service_process("chain_service", env, prefix="CHAIN_", log=tmp_path / "chain.log") as (
            _,
            process,
        ):
            niceness = thread_niceness(process.pid)
            parent = psutil.Process().nice()
        assert niceness == {parent}
