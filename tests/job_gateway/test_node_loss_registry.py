"""Node loss through the real node registry: kuberay-service (real PostgreSQL, real HTTP)
with a short heartbeat timeout, read by the gateway as its inventory; a node that stops
heartbeating goes NotReady and its job is requeued onto a node that beats."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from gridweave_clients import RetryPolicy
from gridweave_clients.nodes import NodeRegistryClient
from gridweave_controller import JobPhase
from job_gateway.inventory import NodeRegistrySource
from tests.job_gateway.gateway_factories import running_gateway, submit_body
from tests.kuberay_service.node_factories import (
    Registry,
    create_key,
    gpu,
    hostname,
    node_headers,
    serve_registry,
    validate,
    validate_body,
)
from tests.support.kubeapi import KubeAPI
from tests.support.kuberay_fixtures import TOKEN
from tests.support.postgres import PostgresTestServer
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

HEARTBEAT_TIMEOUT_S = 1.5
BEAT_EVERY_S = 0.2


@pytest.fixture
def registry(postgres: PostgresTestServer) -> Iterator[Registry]:
    with (
        postgres.database("gwnodeloss") as url,
        serve_registry(url, heartbeat_timeout_seconds=HEARTBEAT_TIMEOUT_S) as served,
    ):
        yield served


def _validated(registry: Registry, name: str) -> str:
    """A node validated with one A100 (NotReady until it registers); its token."""
    body = validate_body(create_key(registry)["key"], name, gpus=[gpu(0)])
    token: str = validate(registry, body).json()["node_token"]
    return token


@contextmanager
def _agent(registry: Registry, token: str) -> Iterator[list[int]]:
    """The node's agent: registered, then a heartbeat every BEAT_EVERY_S until the block ends;
    yields the heartbeats' status codes."""
    stop = threading.Event()
    answers: list[int] = []
    with registry.client(node_headers(token)) as http:
        assert http.post("/v1/nodes/register").status_code == 200

        def beat() -> None:
            while not stop.wait(BEAT_EVERY_S):
                answers.append(http.post("/v1/nodes/heartbeat", json={"gpus": []}).status_code)

        thread = threading.Thread(target=beat, name="heartbeats", daemon=True)
        thread.start()
        try:
            yield answers
        finally:
            stop.set()
            thread.join(10)


class TestNodeLossFromTheRegistry:
    def test_a_node_that_stops_heartbeating_has_its_job_requeued(
        self, kubeapi: KubeAPI, registry: Registry, tmp_path: Path
    ) -> None:
        silent, beating = hostname(), hostname()
        silent_token, beating_token = _validated(registry, silent), _validated(registry, beating)
        client = NodeRegistryClient(registry.url, TOKEN, retry=RetryPolicy(attempts=1))
        with (
            client,
            running_gateway(
                kubeapi,
                tmp_path,
                inventory_source=NodeRegistrySource(client),
                inventory_refresh_seconds=0.1,
                node_lost_grace_seconds=0.3,
                pass_interval_seconds=0.2,
            ) as gateway,
        ):
            # the only Ready node: the job lands there
            with _agent(registry, silent_token) as first:
                body = submit_body(vendor="nvidia", vram_mb=8192, max_retries=2)
                job_id = gateway.http.post("/v1/jobs", json=body).json()["job_id"]
                job = gateway.crd.wait_for_job(job_id, {JobPhase.ALLOCATED}, timeout=30)
                assert job.status.node == silent
            # the first agent has stopped: its node goes NotReady, the job moves
            with _agent(registry, beating_token) as second:
                wait_until(
                    lambda: gateway.crd.get_job(job_id).status.node == beating,
                    what="the job requeued onto the node that beats",
                )
                job = gateway.crd.get_job(job_id)
        assert (job.phase, job.status.attempts) == (JobPhase.ALLOCATED, 1)
        assert set(first + second) == {200}  # every heartbeat taken
