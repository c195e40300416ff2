"""``GET /v1/jobs/{id}?wait=``: answered as soon as the informer sees the job finish, or
when the wait runs out; bounded, and a deleted job still answers 404."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from gridweave_clients.gateway import GatewayClient
from gridweave_clients.gateway.models import MAX_WAIT_SECONDS
from gridweave_controller import JobPhase
from tests.job_gateway.gateway_factories import (
    TOKEN,
    GatewayServer,
    new_job_id,
    running_gateway,
    submit_body,
)
from tests.support.kubeapi import KubeAPI

pytestmark = pytest.mark.kubeapi


@pytest.fixture(scope="module")
def gateway(kubeapi: KubeAPI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayServer]:
    with running_gateway(kubeapi, tmp_path_factory.mktemp("gateway")) as server:
        yield server


def _submitted(gateway: GatewayServer) -> str:
    """A job on the ready NVIDIA node: the gateway allocates it."""
    job_id = new_job_id("poll")
    body = submit_body(job_id, vendor="nvidia", vram_mb=1024)
    assert gateway.http.post("/v1/jobs", json=body).status_code == 201
    gateway.crd.wait_for_job(job_id, {JobPhase.ALLOCATED}, timeout=30)
    return job_id


def _later(delay_s: float, action: object) -> threading.Thread:
    def run() -> None:
        time.sleep(delay_s)
        action()  # type: ignore[operator]

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_the_answer_comes_when_the_job_finishes(gateway: GatewayServer) -> None:
    job_id = _submitted(gateway)
    gateway.crd.set_job_running(job_id)
    mover = _later(1.0, lambda: gateway.crd.set_job_completed(job_id, 1.0))
    started = time.monotonic()
    answer = gateway.http.get(f"/v1/jobs/{job_id}", params={"wait": 20})
    elapsed = time.monotonic() - started
    mover.join()
    assert answer.status_code == 200, answer.text
    assert answer.json()["phase"] == "Completed"
    assert 0.9 <= elapsed < 10, elapsed  # woken by the event, not by the wait running out


def test_a_finished_job_answers_at_once(gateway: GatewayServer) -> None:
    job_id = _submitted(gateway)
    assert gateway.http.post(f"/v1/jobs/{job_id}/cancel").status_code == 200
    started = time.monotonic()
    answer = gateway.http.get(f"/v1/jobs/{job_id}", params={"wait": 20})
    assert answer.json()["phase"] == "Cancelled"
    assert time.monotonic() - started < 5


def test_the_wait_runs_out_with_the_job_as_it_is(gateway: GatewayServer) -> None:
    job_id = _submitted(gateway)
    started = time.monotonic()
    answer = gateway.http.get(f"/v1/jobs/{job_id}", params={"wait": 1.5})
    elapsed = time.monotonic() - started
    assert answer.status_code == 200 and answer.json()["phase"] == "Allocated"
    assert 1.4 <= elapsed < 8, elapsed


def test_a_job_deleted_while_waited_for_answers_404(gateway: GatewayServer) -> None:
    job_id = _submitted(gateway)
    deleter = _later(1.0, lambda: gateway.crd.delete_job(job_id))
    answer = gateway.http.get(f"/v1/jobs/{job_id}", params={"wait": 20})
    deleter.join()
    assert answer.status_code == 404, answer.text


@pytest.mark.parametrize("wait", [-1, MAX_WAIT_SECONDS + 1, "soon"])
def test_a_bad_wait_is_refused_naming_it(gateway: GatewayServer, wait: object) -> None:
    answer = gateway.http.get(f"/v1/jobs/{new_job_id()}", params={"wait": str(wait)})
    assert answer.status_code == 422, answer.text
    assert [f["field"] for f in answer.json()["error"]["fields"]] == ["wait"]


def test_the_typed_client_waits_past_its_read_timeout(gateway: GatewayServer) -> None:
    job_id = _submitted(gateway)
    gateway.crd.set_job_running(job_id)
    mover = _later(2.5, lambda: gateway.crd.set_job_completed(job_id, 1.0))
    with GatewayClient(gateway.url, TOKEN, timeout=1.0) as client:  # reads time out at 1 s
        job = client.get_job(job_id, wait=10)
    mover.join()
    assert job.phase == "Completed"
