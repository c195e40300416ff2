"""``gridweave run``, ``jobs``, ``logs``, ``cancel``, ``usage`` and ``nodes`` against the whole
platform stack (the gateway on the real apiserver, metering and credit on PostgreSQL).

As in the SDK's tests, ``tests.sdk.worker`` plays the worker's part: it runs each Pending
job's real function in this process and writes its outcome where the gateway's worker does.
"""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path

import cloudpickle
import pytest

import gridweave as gw
from gridweave_cli.exit_codes import ExitCode
from gridweave_clients.platform import PlatformClient
from gridweave_controller import JobPhase
from gridweave_runtime.storage import LocalObjectStore, attempt_objects
from tests.cli.helpers import Invoke, as_user, json_of
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.factories import (
    MAX_SUBMISSION,
    PlatformServer,
    User,
    platform_settings,
    running_platform,
)
from tests.sdk.worker import run_job, running_worker
from tests.support.credit_server import CreditServer

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

FUNDS = 10**9
FUNCTIONS = Path(__file__).with_name("sample_functions.py")


def target(name: str) -> str:
    return f"{FUNCTIONS}::{name}"


@pytest.fixture
def alice(platform: PlatformServer, credit: CreditServer, monkeypatch: pytest.MonkeyPatch) -> User:
    """A funded user, the CLI's user."""
    user = platform.new_user()
    credit.fund(user.user_id, FUNDS)
    as_user(monkeypatch, platform, user)
    return user


class TestRun:
    def test_value_as_repr_and_as_json(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User, gridweave: Invoke
    ) -> None:
        with running_worker(gateway, platform.url, alice.key):
            shown = gridweave("run", target("add"), "2", "b=3")
            assert shown.exit_code == 0, shown.output
            # what the function printed (the test worker's line), then the value
            printed, value_line = shown.stdout.splitlines()
            assert printed.startswith("ran job-") and value_line == "{'sum': 105}"
            as_json = gridweave("run", target("add"), "[1]", "label=total", "--json")
            # '[1]' is JSON: a list, so [1] + 0 fails remotely; label is the string 'total'
            assert as_json.exit_code == ExitCode.FAILED
            assert "TypeError" in as_json.stderr
            as_json = gridweave("run", target("add"), "1", "label=total", "--json")
            assert json_of(as_json) == {"total": 101}  # stdout holds the JSON alone
            assert as_json.stderr.startswith("ran job-")  # the function's output, on stderr

    def test_a_plain_function_with_options(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User, gridweave: Invoke
    ) -> None:
        with running_worker(gateway, platform.url, alice.key):
            options = ["--vram", "4GiB", "--vendor", "amd", "--timeout", "30s"]
            packages = ["--pip", "six==1.16.0", "--pip", "requests>=2"]
            result = gridweave("run", target("plain"), "hello", *options, *packages)
            assert result.exit_code == 0, result.output
            assert result.stdout.endswith("\n'HELLO'\n")
        job = json_of(gridweave("jobs", "--json"))["jobs"][-1]
        assert (job["vram_mb"], job["vendor"], job["timeout_seconds"]) == (4096, "amd", 30)
        assert job["pip"] == ["six==1.16.0", "requests>=2"]

    def test_a_remote_exception_prints_its_traceback_and_exits_1(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User, gridweave: Invoke
    ) -> None:
        with running_worker(gateway, platform.url, alice.key):
            result = gridweave("run", target("fail"), "--", "-1")
        assert result.exit_code == ExitCode.FAILED
        assert result.stdout == ""
        assert "Traceback (most recent call last)" in result.stderr
        assert "in fail" in result.stderr
        assert result.stderr.rstrip().endswith("raised ValueError: negative: -1")

    def test_the_spinner_shows_the_phase_on_a_terminal(
        self,
        platform: PlatformServer,
        gateway: GatewayServer,
        alice: User,
        gridweave: Invoke,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich draws as on a terminal
        store = LocalObjectStore(gateway.storage_dir)

        def run_slowly() -> None:
            with PlatformClient(platform.url, alice.key) as client:
                while not (pending := client.list_jobs(JobPhase.PENDING).jobs):
                    time.sleep(0.05)
            job_id = pending[0].job_id
            gateway.crd.set_job_allocated(job_id, "gpu-b", [0])
            gateway.crd.set_job_running(job_id)
            objects = attempt_objects(job_id, 0)
            store.put(objects.stdout, b"step 1\n")  # while it runs
            store.put(objects.stderr, b"warming up\n")
            time.sleep(1.5)
            store.put(objects.stdout, b"step 1\nstep 2\n")  # the whole output, at the end
            result = cloudpickle.dumps(7)
            uri = store.put(attempt_objects(job_id, 0).result, result)
            digest = hashlib.sha256(result).hexdigest()
            gateway.crd.set_job_completed(job_id, 1.5, result_ref=uri, result_sha256=digest)

        worker = threading.Thread(target=run_slowly)
        worker.start()
        result = gridweave("run", target("add"), "1")
        worker.join()
        assert result.exit_code == 0, result.output
        # the function's output, each line once, then the value; the spinner never on stdout
        assert result.stdout == "step 1\nstep 2\n7\n"
        assert ": Pending" in result.stderr and ": Running" in result.stderr
        assert result.stderr.count("warming up") == 1

    def test_detach_prints_the_job_id_at_once(
        self, platform: PlatformServer, alice: User, gridweave: Invoke
    ) -> None:
        result = gridweave("run", target("add"), "1", "--detach")
        assert result.exit_code == 0, result.output
        job_id = result.stdout.strip()
        status = json_of(gridweave("jobs", "--phase", "pending", "--json"))
        assert job_id in [job["job_id"] for job in status["jobs"]]
        detached = json_of(gridweave("run", target("add"), "1", "--detach", "--json"))
        assert detached["job_id"].startswith("job-")
        for job in (job_id, detached["job_id"]):
            assert gridweave("cancel", job).exit_code == 0

    def test_a_value_that_is_not_json(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User, gridweave: Invoke
    ) -> None:
        with running_worker(gateway, platform.url, alice.key):
            result = gridweave("run", target("unjsonable"), "--json")
        assert result.exit_code == ExitCode.FAILED and result.stdout == ""
        assert "is not JSON" in result.stderr

    @pytest.mark.parametrize(
        ("arguments", "named"),
        [
            (["nowhere.py::add"], "no such file"),
            ([target("missing")], "has no 'missing'"),
            ([target("NOT_A_FUNCTION")], "is not a function"),
            ([target("plain"), "x"], "--vram"),
            ([target("add"), "--vram", "lots"], "vram='lots'"),
            ([target("add"), "--pip", "six @ https://example.com/six.whl"], "names a URL"),
            ([target("add"), "a=1", "a=2"], "a= is given twice"),
            (["no-separator"], "FILE.py::FUNCTION"),
        ],
    )
    def test_usage_errors_are_exit_2(
        self, alice: User, gridweave: Invoke, arguments: list[str], named: str
    ) -> None:
        result = gridweave("run", *arguments)
        assert result.exit_code == ExitCode.USAGE, result.output
        assert named in result.stderr

    def test_no_credits_is_4(
        self, platform: PlatformServer, gridweave: Invoke, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        as_user(monkeypatch, platform, platform.new_user())
        result = gridweave("run", target("add"), "1")
        assert result.exit_code == ExitCode.INSUFFICIENT_CREDITS, result.output
        assert "needed 5400" in result.stderr and len(result.stderr.splitlines()) == 1

    def test_no_gpu_large_enough_is_5(self, alice: User, gridweave: Invoke) -> None:
        result = gridweave("run", target("add"), "1", "--vram", "200GB", "--vendor", "nvidia")
        assert result.exit_code == ExitCode.INVALID_REQUEST, result.output
        assert "A100 80GB" in result.stderr


class TestJobs:
    def test_table_json_and_phase_filter_with_the_cost(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User, gridweave: Invoke
    ) -> None:
        assert gridweave("jobs").stdout == "No jobs.\n"
        done = gridweave("run", target("add"), "1", "--detach").stdout.strip()
        run_job(gateway, LocalObjectStore(gateway.storage_dir), done)
        waiting = gridweave("run", target("add"), "2", "--detach").stdout.strip()

        # oldest first, but both may carry the same creation second: read them by id
        listed = {job["job_id"]: job for job in json_of(gridweave("jobs", "--json"))["jobs"]}
        assert set(listed) == {done, waiting}
        assert (listed[done]["phase"], listed[waiting]["phase"]) == ("Completed", "Pending")
        # the name the SDK sent went through the platform, the gateway and the CRD's schema
        assert listed[done]["function_name"] == listed[waiting]["function_name"] == "add"
        assert listed[waiting]["cost"] is None
        cost = _wait_for_cost(gridweave, done)  # metering bills the 0.5 s run as 1 s
        assert cost == 90  # AMD up to 16 GiB: 90 per GPU-second

        header, *rows = gridweave("jobs").stdout.splitlines()
        assert header.split() == [
            "job",
            "function",
            "phase",
            "node",
            "[GPUs]",
            "GPUs",
            "x",
            "VRAM",
            "age",
            "cost",
        ]
        by_id = {row.split()[0]: row.split() for row in rows}
        assert by_id[done][1:5] == ["add", "Completed", "gpu-b", "[0]"]
        assert by_id[done][5:8] == ["1", "x", "8"] and by_id[done][-1] == "0.000090"
        assert by_id[waiting][1:4] == ["add", "Pending", "-"] and by_id[waiting][-1] == "-"

        pending = json_of(gridweave("jobs", "--phase", "PENDING", "--json"))["jobs"]
        assert [job["job_id"] for job in pending] == [waiting]
        refused = gridweave("jobs", "--phase", "Sleeping")
        assert refused.exit_code == ExitCode.USAGE and "Sleeping" in refused.stderr
        gridweave("cancel", waiting)

    def test_without_costs_when_usage_cannot_be_read(
        self,
        platform_database: str,
        credit: CreditServer,
        gateway: GatewayServer,
        alice: User,
        gridweave: Invoke,
        monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path,
    ) -> None:
        settings = platform_settings(
            platform_database,
            tmp_path,
            credit_service_url=credit.url,
            gateway_url=gateway.url,
            metering_service_url="http://127.0.0.1:9",  # discard: no metering there
            storage_dir=gateway.storage_dir,
            max_submission_bytes=MAX_SUBMISSION,
        )
        # submitted where metering answers (it authorizes the hold), read where it does not
        job_id = gridweave("run", target("add"), "1", "--detach").stdout.strip()
        with monkeypatch.context() as patched, running_platform(settings) as without_metering:
            patched.setenv("GRIDWEAVE_URL", without_metering.url)
            assert gridweave("usage").exit_code == ExitCode.UNREACHABLE
            listed = gridweave("jobs", "--json")
        assert gridweave("cancel", job_id).exit_code == 0
        jobs = json_of(listed)["jobs"]
        assert [job["cost"] for job in jobs if job["job_id"] == job_id] == [None]
        assert listed.stderr.startswith("note: costs left out: usage could not be read")


class TestJobsLimit:
    def test_the_newest_twenty_by_default_then_limit_and_all(
        self, platform: PlatformServer, alice: User, gridweave: Invoke
    ) -> None:
        submitted = [_held(42).job_id for _ in range(23)]
        try:
            shown = gridweave("jobs")
            assert shown.exit_code == 0, shown.output
            ids = [line.split()[0] for line in shown.stdout.splitlines()[1:]]
            # newest first (jobs created in the same second may come in any order)
            assert len(set(ids)) == 20 and set(ids) <= set(submitted)
            assert "the newest 20 of 23 jobs" in shown.stderr
            limited = gridweave("jobs", "--limit", "5").stdout.splitlines()[1:]
            assert [line.split()[0] for line in limited] == ids[:5]
            every = gridweave("jobs", "--all")
            assert len(every.stdout.splitlines()) == 24 and "newest" not in every.stderr
            listed = json_of(gridweave("jobs", "--json", "-n", "3"))
            assert listed["total"] == 23 and len(listed["jobs"]) == 3
        finally:
            for job_id in submitted:
                gridweave("cancel", job_id)


class TestAtEightyColumns:
    def test_jobs_usage_and_nodes_fit_without_cutting_an_id(
        self,
        platform: PlatformServer,
        gateway: GatewayServer,
        alice: User,
        gridweave: Invoke,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        done = gridweave("run", target("add"), "1", "--detach").stdout.strip()
        run_job(gateway, LocalObjectStore(gateway.storage_dir), done)
        _wait_for_cost(gridweave, done)
        monkeypatch.setenv("COLUMNS", "80")
        tables = {command: gridweave(command) for command in ("jobs", "usage", "nodes")}
        for command, shown in tables.items():
            assert shown.exit_code == 0, shown.output
            lines = shown.stdout.splitlines()
            assert all(len(line) <= 80 for line in lines), (command, lines)
        for command in ("jobs", "usage"):  # a row per record: the id whole, on its line
            rows = tables[command].stdout.splitlines()[1:]
            assert [row.split()[0] for row in rows][:1] == [done], tables[command].stdout
        assert "gpu-a" in tables["nodes"].stdout and "/ 80 GiB" in tables["nodes"].stdout


def _held(seconds: int) -> gw.JobHandle[int]:
    """A submitted job the test's gateway places and nothing runs (cancel it after)."""
    return gw.function(vram="1GiB", vendor="amd", timeout="1m")(_sleep).spawn(seconds)


def _sleep(seconds: int) -> int:
    time.sleep(seconds)
    return seconds


class TestLogs:
    def test_logs_and_follow_until_the_job_ends(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User, gridweave: Invoke
    ) -> None:
        job_id = gridweave("run", target("add"), "1", "--detach").stdout.strip()
        store = LocalObjectStore(gateway.storage_dir)
        objects = attempt_objects(job_id, 0)
        gateway.crd.set_job_allocated(job_id, "gpu-b", [0])
        gateway.crd.set_job_running(job_id)
        store.put(objects.stdout, b"epoch 1\n")
        store.put(objects.stderr, b"warming up\n")

        now = json_of(gridweave("logs", job_id, "--json"))
        assert (now["stdout"], now["stderr"], now["finished"]) == (
            "epoch 1\n",
            "warming up\n",
            False,
        )

        def finish_later() -> None:
            time.sleep(1.2)
            store.put(objects.stdout, b"epoch 1\nepoch 2\n")
            time.sleep(0.6)
            store.put(objects.stdout, b"epoch 1\nepoch 2\ndone\n")
            gateway.crd.set_job_completed(job_id, 2.0, result_ref=None)

        writer = threading.Thread(target=finish_later)
        writer.start()
        started = time.monotonic()
        followed = gridweave("logs", job_id, "--follow")
        writer.join()
        assert followed.exit_code == 0, followed.output
        assert time.monotonic() - started >= 1.8  # it waited for the job to end
        # each line once, in order; stderr once
        assert followed.stdout == "epoch 1\nepoch 2\ndone\n"
        assert followed.stderr == "warming up\n"

        # once finished, --follow returns at once
        again = gridweave("logs", job_id, "--follow", "--json")
        lines = [line for line in again.stdout.splitlines() if line]
        assert len(lines) == 1 and '"finished": true' in lines[0]

    def test_an_unknown_or_another_users_job_is_3(
        self,
        platform: PlatformServer,
        alice: User,
        gridweave: Invoke,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        job_id = gridweave("run", target("add"), "1", "--detach").stdout.strip()
        as_user(monkeypatch, platform, platform.new_user())
        for command in (["logs", job_id], ["cancel", job_id], ["logs", "job-0000"]):
            result = gridweave(*command)
            assert result.exit_code == ExitCode.NOT_FOUND, (command, result.output)
            assert result.stderr.startswith("error: ")


class TestCancel:
    def test_cancel_then_a_finished_job_is_1(
        self,
        platform: PlatformServer,
        gateway: GatewayServer,
        credit: CreditServer,
        alice: User,
        gridweave: Invoke,
    ) -> None:
        job_id = gridweave("run", target("add"), "1", "--detach").stdout.strip()
        assert credit.account(alice.user_id)["held"] > 0
        assert gridweave("cancel", job_id).stdout == f"{job_id}: Cancelled\n"
        assert json_of(gridweave("cancel", job_id, "--json"))["phase"] == "Cancelled"
        assert credit.account(alice.user_id)["held"] == 0

        done = gridweave("run", target("add"), "1", "--detach").stdout.strip()
        run_job(gateway, LocalObjectStore(gateway.storage_dir), done)
        refused = gridweave("cancel", done)
        assert refused.exit_code == ExitCode.FAILED
        assert refused.stderr.startswith("error: ") and "Traceback" not in refused.output


class TestUsageAndNodes:
    def test_usage_records_and_totals(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User, gridweave: Invoke
    ) -> None:
        assert gridweave("usage").stdout == "No usage yet.\n"
        job_id = gridweave("run", target("add"), "1", "--detach").stdout.strip()
        run_job(gateway, LocalObjectStore(gateway.storage_dir), job_id)
        _wait_for_cost(gridweave, job_id)
        page = json_of(gridweave("usage", "--json"))
        assert [record["job_id"] for record in page["records"]] == [job_id]
        assert page["totals"]["cost"] == 90
        table = gridweave("usage").stdout
        assert job_id in table and "gpu-b [0]" in table and "1 records" in table

    def test_nodes_with_bars_and_simulated_marks(
        self, platform: PlatformServer, alice: User, gridweave: Invoke
    ) -> None:
        inventory = json_of(gridweave("nodes", "--json"))
        names = {node["name"] for node in inventory["nodes"]}
        assert {"gpu-a", "gpu-b"} <= names
        table = gridweave("nodes").stdout
        assert "A100 80GB" in table and "80 GiB" in table and "(not ready)" in table
        simulated = [gpu for node in inventory["nodes"] for gpu in node["gpus"] if gpu["simulated"]]
        assert table.count("simulated") == len(simulated)


def _wait_for_cost(gridweave: Invoke, job_id: str) -> int:
    """The job's cost once metering billed it (the gateway reports it as it sees it end)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        jobs = json_of(gridweave("jobs", "--json"))["jobs"]
        cost = next(job["cost"] for job in jobs if job["job_id"] == job_id)
        if cost is not None:
            return int(cost)
        time.sleep(0.2)
    raise AssertionError(f"{job_id} was not billed within 20 s")
