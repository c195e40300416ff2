"""Usage to metering, exactly once in effect: the real gateway, apiserver, metering and credit.

metering_service runs on a real PostgreSQL and settles holds with a real credit_service,
all over HTTP. Records are counted through metering's API (the period totals of a user of
the test's own), charges through credit_service's ledger.
"""

from __future__ import annotations

import signal
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from gridweave_controller import CrdClient, Job, JobPhase
from job_gateway.usage import UsageNotReportable, billed_gpus, is_due, usage_request
from metering_service.app import create_app as create_metering_app
from tests.job_gateway.gateway_factories import (
    INVENTORY_YAML,
    blocking_crd,
    new_job_id,
    running_gateway,
)
from tests.job_gateway.metering_factories import (
    Metering,
    assert_billed_once,
    funded_user,
    usage_mark,
    wait_reported,
)
from tests.job_gateway.metrics_reading import metric_value
from tests.support.credentials import service_auth, service_auth_env
from tests.support.credit_server import INTERNAL_TOKEN
from tests.support.held_answers import held_answers
from tests.support.http_server import free_port, serve_in_thread
from tests.support.kubeapi import KubeAPI, namespace_for_test
from tests.support.service_process import service_process
from tests.support.waiting import wait_until

pytestmark = pytest.mark.kubeapi

GIB = 1024
HELD = (JobPhase.ALLOCATED, JobPhase.RUNNING)
#: short backoff and timeout: the failures these tests cause are retried within a second
FAST_RETRIES: dict[str, Any] = {
    "usage_retry_max_seconds": 0.3,
    "usage_report_timeout_seconds": 1.0,
}
#: one internal token for the deployment: the gateway calls metering with it
SHARED_TOKEN: dict[str, Any] = {**service_auth(INTERNAL_TOKEN)}


def finished_job(
    crd: CrdClient, metering: Metering, user_id: str, *, wall_seconds: float = 12.5
) -> str:
    """A job with a credit hold, placed by the gateway, then run to Completed; its id."""
    job_id = new_job_id()
    metering.credit.place_hold(user_id, 1_000_000, job_id)
    crd.create_job(job_id, user_id, "file:///f.pkl", vram_mb=8 * GIB, vendor="nvidia")
    crd.wait_for_job(job_id, [JobPhase.ALLOCATED], timeout=30)
    crd.set_job_running(job_id)
    crd.set_job_completed(job_id, wall_seconds)
    return job_id


def released_mark(job: Job) -> str | None:
    """The reason of the job's UsageReported mark, if it has one."""
    condition = job.status.condition("UsageReported")
    return None if condition is None else condition.reason


class TestReporting:
    def test_a_finished_job_is_reported_once_and_a_pending_ones_hold_released(
        self, kubeapi: KubeAPI, metering: Metering, tmp_path: Path
    ) -> None:
        user_id = funded_user(metering)
        with running_gateway(
            kubeapi, tmp_path, metering_service_url=metering.url, **SHARED_TOKEN
        ) as gw:
            never_ran, no_hold = new_job_id(), new_job_id()
            metering.credit.place_hold(user_id, 777_777, never_ran)
            for name in (never_ran, no_hold):
                gw.crd.create_job(name, user_id, "file:///f.pkl", vram_mb=GIB, vendor="amd")
                gw.crd.set_job_cancelled(name)  # cancelled while Pending: nothing to bill
            job_id = finished_job(gw.crd, metering, user_id)
            record_id = wait_reported(gw.crd, job_id)
            released = (never_ran, no_hold)
            wait_until(
                lambda: all(released_mark(gw.crd.get_job(n)) == "HoldReleased" for n in released),
                what="both marked released",
            )
            job = gw.crd.get_job(job_id)
            assert job.phase is JobPhase.COMPLETED
            assert (
                metric_value(gw.http, "gridweave_gateway_usage_reports_total", outcome="sent") == 3
            )
            assert metric_value(gw.http, "gridweave_gateway_usage_reports_waiting") == 0
        # the never-run job's hold came back whole: one charge on the ledger, the job's
        assert_billed_once(metering, user_id, job_id, record_id)
        assert metering.credit.account(user_id)["held"] == 0
        (record,) = metering.records(user_id)
        assert record["node"] == job.status.node
        assert record["gpu_indices"] == list(job.status.gpu_indices)
        assert (record["vendor"], record["vram_mb"], record["gpu_count"]) == ("nvidia", 8192, 1)
        assert (record["wall_seconds"], record["billed_seconds"]) == (12.5, 13)
        assert record["hold_reference"] == job_id
        assert metering.gpu_model(job_id) == "NVIDIA A100 80GB"  # from the inventory

    def test_metering_down_then_up_gets_the_report(
        self, kubeapi: KubeAPI, metering: Metering, tmp_path: Path
    ) -> None:
        user_id = funded_user(metering)
        port = free_port()  # nothing listens there yet: metering is down
        with running_gateway(
            kubeapi,
            tmp_path,
            metering_service_url=f"http://127.0.0.1:{port}",
            **FAST_RETRIES,
            **SHARED_TOKEN,
        ) as gw:
            job_id = finished_job(gw.crd, metering, user_id)
            wait_until(
                lambda: (
                    metric_value(gw.http, "gridweave_gateway_usage_reports_total", outcome="failed")
                    >= 2
                ),
                what="failed attempts",
            )
            assert usage_mark(gw.crd.get_job(job_id)) is None
            assert metric_value(gw.http, "gridweave_gateway_usage_reports_waiting") == 1
            app = create_metering_app(metering.settings)
            try:
                with serve_in_thread(app, app.state.settings, port=port):  # metering is up
                    record_id = wait_reported(gw.crd, job_id)
            finally:
                app.state.database.dispose()
        assert_billed_once(metering, user_id, job_id, record_id)


class TestRestart:
    def test_metering_hanging_then_a_restart_before_the_mark_bills_once(
        self, kubeapi: KubeAPI, metering: Metering, tmp_path: Path
    ) -> None:
        user_id = funded_user(metering)
        # metering records every report, its answers never come back: each attempt times out
        # (no endpoint billing: every call the proxy counts is the job's report)
        with (
            held_answers(metering.url) as (proxy_url, proxy),
            running_gateway(
                kubeapi,
                tmp_path,
                metering_service_url=proxy_url,
                endpoint_billing_interval_seconds=0,
                **FAST_RETRIES,
                **SHARED_TOKEN,
            ) as first,
        ):
            job_id = finished_job(first.crd, metering, user_id)
            wait_until(lambda: proxy.forwarded >= 2, what="a report and its retry")
            # the scheduling loop goes on meanwhile
            other = new_job_id()
            first.crd.create_job(other, user_id, "file:///f.pkl", vram_mb=GIB, vendor="nvidia")
            first.crd.wait_for_job(other, HELD, timeout=30)
            assert usage_mark(first.crd.get_job(job_id)) is None
            assert len(metering.records(user_id)) == 1  # the replays found the first record
            namespace = first.namespace
        with running_gateway(
            kubeapi,
            tmp_path,
            namespace=namespace,
            metering_service_url=metering.url,
            **SHARED_TOKEN,
        ) as second:
            record_id = wait_reported(second.crd, job_id)
        assert_billed_once(metering, user_id, job_id, record_id)

    def test_a_gateway_killed_mid_report_reports_once_after_restart(
        self, kubeapi: KubeAPI, metering: Metering, tmp_path: Path
    ) -> None:
        user_id = funded_user(metering)
        namespace = f"gw-usage-{uuid.uuid4().hex[:8]}"
        with (
            namespace_for_test(kubeapi, namespace),
            blocking_crd(kubeapi.kubeconfig, namespace) as crd,
            held_answers(metering.url) as (proxy_url, proxy),
            gateway_process(kubeapi, namespace, tmp_path / "killed", proxy_url) as process,
        ):
            job_id = finished_job(crd, metering, user_id)
            wait_until(lambda: proxy.forwarded >= 1, what="the report reaching metering")
            process.send_signal(signal.SIGKILL)  # its answer still held: never marked
            process.wait(timeout=30)
            assert len(metering.records(user_id)) == 1
            assert usage_mark(crd.get_job(job_id)) is None
        with running_gateway(
            kubeapi,
            tmp_path,
            namespace=namespace,
            metering_service_url=metering.url,
            **SHARED_TOKEN,
        ) as again:
            record_id = wait_reported(again.crd, job_id)
        assert_billed_once(metering, user_id, job_id, record_id)


@contextmanager
def gateway_process(
    kubeapi: KubeAPI, namespace: str, workdir: Path, metering_url: str
) -> Iterator[subprocess.Popen[bytes]]:
    """``python -m job_gateway`` on the namespace, served until killed (or stopped after)."""
    workdir.mkdir(parents=True)
    inventory = workdir / "inventory.yaml"
    inventory.write_text(INVENTORY_YAML)
    env = {
        **service_auth_env(INTERNAL_TOKEN),
        "GRIDWEAVE_STATE_DIR": str(workdir),
        "GATEWAY_CRD_TRANSPORT": "direct",
        "GATEWAY_KUBECONFIG": str(kubeapi.kubeconfig),
        "GATEWAY_NAMESPACE": namespace,
        "GATEWAY_INVENTORY_SOURCE": "file",
        "GATEWAY_INVENTORY_FILE": str(inventory),
        "GATEWAY_PASS_INTERVAL_SECONDS": "60",
        "GATEWAY_EXECUTE_JOBS": "false",  # placed, not run: the test moves the job itself
        # no endpoint here: every call the proxy counts is a job's usage report
        "GATEWAY_ENDPOINT_BILLING_INTERVAL_SECONDS": "0",
        "METERING_SERVICE_URL": metering_url,
    }
    with service_process("job_gateway", env, prefix="GATEWAY_", log=workdir / "gateway.log") as (
        _url,
        process,
    ):
        yield process


def raw_job(phase: str, **status: Any) -> Job:
    """A job as the informer hands it over: ``phase`` and other raw status fields."""
    return Job.from_raw(
        {
            "metadata": {"name": "job-due", "resourceVersion": "1"},
            "spec": {"userId": "alice", "functionRef": "f", "vramMb": 1024, "vendor": "any"},
            "status": {"phase": phase, **status},
        }
    )


def usage_condition(status: str) -> dict[str, str]:
    return {
        "type": "UsageReported",
        "status": status,
        "reason": "Reported",
        "message": "1",
        "lastTransitionTime": "2026-12-03T08:00:00Z",
    }


def released_condition() -> dict[str, str]:
    return {**usage_condition("True"), "reason": "HoldReleased", "message": ""}


class TestDueRule:
    @pytest.mark.parametrize(
        ("job", "due"),
        [
            (raw_job("Completed", node="n", gpuIndices=[0]), True),
            (raw_job("TimedOut", node="n", gpuIndices=[0, 1]), True),
            (raw_job("Cancelled"), True),  # never held GPUs: its hold is released
            (raw_job("Failed", conditions=[released_condition()]), False),
            (raw_job("Running", node="n", gpuIndices=[0]), False),
            (
                raw_job("Failed", node="n", gpuIndices=[0], conditions=[usage_condition("True")]),
                False,
            ),
            (
                raw_job("Failed", node="n", gpuIndices=[0], conditions=[usage_condition("False")]),
                True,
            ),
        ],
    )
    def test_finished_jobs_that_are_unmarked(self, job: Job, due: bool) -> None:
        assert is_due(job) is due

    def test_no_vendor_without_the_gpu_in_the_inventory_waits(self) -> None:
        job = raw_job("Completed", node="gone", gpuIndices=[3], wallSeconds=2.0)
        with pytest.raises(UsageNotReportable, match="gone GPU 3"):
            usage_request(job, None)

    def test_a_job_ended_before_it_was_placed_again_is_billed_where_it_was_lost(self) -> None:
        """Requeued after 25 s on node n, then cancelled while Pending: those seconds are
        billed on the lost attempt's GPUs, not released."""
        job = Job.from_raw(
            {
                "metadata": {"name": "job-requeued", "resourceVersion": "1"},
                "spec": {"userId": "alice", "functionRef": "f", "vramMb": 1024, "vendor": "amd"},
                "status": {
                    "phase": "Cancelled",
                    "earlierSeconds": 25.0,
                    "earlierNode": "n",
                    "earlierGpuIndices": [1],
                    "attempts": 1,
                },
            }
        )
        assert is_due(job)
        assert billed_gpus(job) == ("n", (1,))
        request = usage_request(job, None)
        assert (request.node, request.gpu_indices, request.wall_seconds) == ("n", [1], 25.0)
        assert (request.gpu_count, request.hold_reference) == (1, job.name)

    def test_a_job_that_never_held_a_gpu_has_nothing_to_bill(self) -> None:
        with pytest.raises(ValueError, match="never held a GPU"):
            billed_gpus(raw_job("Failed"))

    def test_the_lost_attempts_seconds_are_reported_with_the_last(self) -> None:
        job = Job.from_raw(
            {
                "metadata": {"name": "job-lost", "resourceVersion": "1"},
                "spec": {"userId": "alice", "functionRef": "f", "vramMb": 1024, "vendor": "nvidia"},
                "status": {
                    "phase": "Completed",
                    "node": "n",
                    "gpuIndices": [0],
                    "wallSeconds": 2.5,
                    "earlierSeconds": 25.0,
                    "attempts": 1,
                },
            }
        )
        assert usage_request(job, None).wall_seconds == 27.5
