"""The whole platform as a new user meets it: ``gridweave up`` in a temporary directory.

Real processes on real ports (the Kubernetes API, PostgreSQL, every service, a local Ray):
each service's credential refused on the others' routes; sign up with the code the console
shows, run functions through the SDK, read results, logs and usage, check that the balance
moved by exactly what was billed and that a cancelled job bills only the seconds it ran;
then Ctrl-C (nothing left running), start again over the same directory, and find the same
jobs, key and balance.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import ParamSpec, TypeVar

import httpx
import pytest

import gridweave as gw
from gridweave_allinone.secrets import service_tokens
from gridweave_clients.chain.models import ReceiptProofResponse
from gridweave_clients.credit import CreditClient
from gridweave_clients.credit.models import BooksResponse
from gridweave_clients.errors import NotFound
from gridweave_clients.platform import PlatformClient
from tests.allinone import functions
from tests.allinone.credential_checks import (
    check_every_token_is_its_owners,
    check_routes_refuse_other_credentials,
)
from tests.support.allinone import (
    AllInOneProcess,
    functions_by_value,
    leftover_processes,
    reachable_workdir,
    sign_up_from_console,
)
from tests.support.service_process import thread_niceness

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres, pytest.mark.timeout(900)]

P = ParamSpec("P")
R = TypeVar("R")
EMAIL = "newcomer@example.com"
MAP_SIZE = 20
SLEEP_BEFORE_CANCEL_S = 3.0
TIMEOUT_S = 300
#: Runs the command in its arguments with SIGINT ignored (an exec keeps the disposition).
_EXEC_WITH_SIGINT_IGNORED = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "os.execv(sys.argv[1], sys.argv[1:])"
)


@pytest.fixture(autouse=True)
def own_functions(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No configuration leaks in; the test's functions travel by value."""
    with functions_by_value(monkeypatch, functions):
        yield


def _remote(fn: Callable[P, R]) -> gw.Function[P, R]:
    return gw.function(vram="1GB", timeout=TIMEOUT_S)(fn)


def _sign_up(platform: AllInOneProcess) -> str:
    """The faucet's flow with the code the all-in-one prints; the new user's API key."""
    registered = sign_up_from_console(platform, EMAIL)
    assert registered.grant is not None and registered.grant > 0
    return registered.api_key.api_key


def _wait_settled(client: PlatformClient, records: int, *, timeout_s: float = 120) -> None:
    """Until metering has ``records`` usage records, each settled, and nothing is held.

    A hold reads as closed as soon as credit_service captures it, a moment before metering
    notes the record settled (``charged``): both are waited for.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        usage, credits = client.list_usage(limit=200), client.get_credits()
        settled = all(record.settlement.state == "settled" for record in usage.records)
        if usage.totals.records >= records and settled and credits.held == 0:
            return
        assert time.monotonic() < deadline, f"not settled: {usage.totals}, {credits}"
        time.sleep(0.5)


def _books_balanced(platform: AllInOneProcess, *, timeout_s: float = 60) -> BooksResponse:
    """credit_service's books once no hold is open (nothing runs: every job's hold is
    settled); every account agrees with its ledger and its open holds at every read."""
    deadline = time.monotonic() + timeout_s
    token = service_tokens(platform.state_dir)["operator"]  # the books are an admin's
    with CreditClient(platform.url("credit"), token, role="admin") as credit:
        while True:
            books = credit.check_books()
            assert books.out_of_balance == [], books
            if books.open_holds == 0:
                return books
            assert time.monotonic() < deadline, f"holds left open with nothing running: {books}"
            time.sleep(0.5)


def _niceness_by_module(state_dir: Path) -> dict[str, set[int]]:
    """The niceness of every thread of the all-in-one's ``python -m <module>`` processes."""
    found: dict[str, set[int]] = {}
    for line in leftover_processes(state_dir):
        pid, command = line.split(": ", 1)
        words = command.split()
        if "-m" in words[:-1]:
            module = words[words.index("-m") + 1]
            found.setdefault(module, set()).update(thread_niceness(int(pid)))
    return found


def _wait_receipt(client: PlatformClient, job_id: str) -> ReceiptProofResponse:
    """The job's receipt, once the deliverer has sent it to chain_service."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return client.get_receipt(job_id)
        except NotFound:
            assert time.monotonic() < deadline, f"no receipt of {job_id}"
            time.sleep(0.5)


def _cancel_while_running(sleeper: gw.Function[[float], float]) -> gw.JobHandle[float]:
    """Spawned, cancelled SLEEP_BEFORE_CANCEL_S after it started running, then finished."""
    handle = sleeper.spawn(600)
    deadline = time.monotonic() + 120
    while handle.status().phase != "Running":
        assert time.monotonic() < deadline, handle.status()
        time.sleep(0.2)
    time.sleep(SLEEP_BEFORE_CANCEL_S)
    handle.cancel()
    while not handle.status().finished:
        assert time.monotonic() < deadline, handle.status()
        time.sleep(0.2)
    return handle


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A directory of its own under /tmp (``reachable_workdir``)."""
    with reachable_workdir("gw-up-") as path:
        yield path


def _readme_example(workdir: Path, platform: AllInOneProcess) -> str:
    """The README's 30-second example, run as written with the saved admin key; its output."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    source = readme.split("cat > hello.py <<'PY'\n", 1)[1].split("\nPY\n", 1)[0]
    (workdir / "hello.py").write_text(source)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("GRIDWEAVE_")}
    result = subprocess.run(
        [sys.executable, "hello.py"],
        cwd=workdir,
        env={**environment, "GRIDWEAVE_CONFIG": str(platform.config_file)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_new_user_on_the_all_in_one(workdir: Path) -> None:
    with AllInOneProcess(workdir) as platform, ExitStack() as closing:
        assert "admin API key (shown once): gw_live_" in platform.output
        assert platform.config_file.exists(), "the first admin's key is saved for the CLI"
        # each service its own credential, and its roles bound to it
        check_routes_refuse_other_credentials(platform)
        check_every_token_is_its_owners(platform.state_dir)
        assert _readme_example(workdir, platform) == "49\n[0, 1, 4, 9, 16, 25, 36, 49, 64, 81]\n"
        registry = httpx.get(f"{platform.url('registry')}/v2/", timeout=10)
        assert registry.status_code == 401  # token auth, the realm on the platform
        assert (
            f"localhost:{platform.port_offset + 8100}/v1/registry/token"
            in (registry.headers["www-authenticate"])
        )
        api_key = _sign_up(platform)
        gw.configure(url=platform.url("platform"), api_key=api_key)
        client = closing.enter_context(PlatformClient(platform.url("platform"), api_key))
        before = client.get_credits()
        assert before.balance == before.available > 0

        square = _remote(functions.square)
        handle = square.spawn(7)
        assert handle.result(timeout=180) == 49
        assert handle.logs().stdout == "squaring 7\n"
        with pytest.raises(ValueError, match="refused: on purpose") as raised:
            _remote(functions.refuse).remote("on purpose")
        assert "in refuse" in raised.value.remote_traceback  # type: ignore[attr-defined]
        assert square.map(range(MAP_SIZE)) == [i * i for i in range(MAP_SIZE)]
        cancelled = _cancel_while_running(_remote(functions.sleep_for))
        assert cancelled.status().phase == "Cancelled"

        # one usage record per job, and per worker of the map (each worker one allocation)
        jobs = 1 + 1 + min(MAP_SIZE, gw.DEFAULT_MAP_CONCURRENCY) + 1
        _wait_settled(client, jobs)
        usage = client.list_usage(limit=200)
        after = client.get_credits()
        assert usage.totals.records == jobs
        assert sum(record.cost for record in usage.records) == usage.totals.cost
        assert before.balance - after.balance == usage.totals.charged == usage.totals.cost > 0
        for record in usage.records:
            assert record.cost == record.billed_seconds * record.price_per_gpu_second
        (cancel_record,) = [r for r in usage.records if r.job_id == cancelled.job_id]
        # billed for the seconds it ran (rounded up, plus the worker's start), not its hold
        assert SLEEP_BEFORE_CANCEL_S <= cancel_record.billed_seconds <= SLEEP_BEFORE_CANCEL_S + 30
        assert cancel_record.cost < cancel_record.price_per_gpu_second * TIMEOUT_S  # its hold
        # metering's receipt deliverer, a process of the all-in-one's, put it in the chain
        receipt = _wait_receipt(client, handle.job_id).receipt
        (record,) = [r for r in usage.records if r.job_id == handle.job_id]
        assert receipt.hold_reference == handle.job_id and receipt.cost == record.cost > 0
        # the chain's processes below the settlement path (METERING_RECEIPT_NICENESS,
        # CHAIN_NICENESS): the deliverer and chain_service niced, metering's API not
        niceness = _niceness_by_module(platform.state_dir)
        assert niceness["metering_service.deliverer"] == niceness["chain_service"] == {10}
        assert niceness["metering_service"] == {os.getpriority(os.PRIO_PROCESS, 0)}
        job_ids = {job.job_id for job in client.list_jobs().jobs}
        # the invariants of the money: balances == ledgers, held == open holds == live work
        books = _books_balanced(platform)
        assert books.accounts >= 2 and books.open_held == 0

    assert platform.returncode == 0, platform.output
    assert "nothing of Gridweave is left running" in platform.output
    assert leftover_processes(platform.state_dir) == []

    # started as a non-interactive shell starts a background command (SIGINT ignored):
    # Ctrl-C stops it all the same
    sigint_ignored = [sys.executable, "-c", _EXEC_WITH_SIGINT_IGNORED]
    with AllInOneProcess(
        workdir, port_offset=platform.port_offset, command_prefix=sigint_ignored
    ) as again:
        assert "admin API key" not in again.output, "a key is shown on the first start only"
        with PlatformClient(again.url("platform"), api_key) as client:
            assert client.get_credits() == after
            assert {job.job_id for job in client.list_jobs().jobs} == job_ids
            assert client.list_usage(limit=200).totals == usage.totals
            assert client.get_job_result(handle.job_id)  # the stored result is still there
        assert _books_balanced(again) == books
    assert again.returncode == 0, again.output
    assert leftover_processes(again.state_dir) == []
