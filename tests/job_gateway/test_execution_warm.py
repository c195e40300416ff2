"""Warm workers on the three-node Ray: a job takes a spare started ahead, the same user's next
job on the same GPUs runs in the same process, another user's never does, and an idle worker
exits by itself."""

from __future__ import annotations

import json

import pytest
import ray

from gridweave_controller import CrdClient, JobPhase
from gridweave_controller.phases import JOB_TERMINAL_PHASES
from gridweave_runtime.storage import LocalObjectStore, StorageConfig
from job_gateway.execution import NAMESPACE, outcome_key
from job_gateway.execution.actors import actor_alive
from job_gateway.execution.settings import WarmSettings
from job_gateway.execution.spares import SPARE_PREFIX, WarmPool, worker_name
from tests.job_gateway import execution_functions as fn
from tests.job_gateway.execution_factories import (
    RayWorld,
    allocated_job,
    process_gone,
    running_executor,
    wait_for_phase,
)
from tests.support.kubeapi import KubeAPI
from tests.support.waiting import wait_until

pytestmark = pytest.mark.kubeapi

# the pool hands out workers idle for less than IDLE_S - 5 s, a spare's idle time counted
# from its start: room for three spares to start on a loaded machine
IDLE_S = 40.0
WARM = WarmSettings(spares=1, max_idle=4, idle_seconds=IDLE_S)


def _ran_in(store: LocalObjectStore, job_id: str) -> tuple[str, int]:
    """(the worker's actor name, its pid) of the job's first attempt."""
    name = worker_name(store, job_id, 0)
    outcome = json.loads(store.get(store.uri(outcome_key(job_id, 0))))
    return name, int(outcome["pid"])


def _spare_names() -> list[str]:
    named = ray.util.list_named_actors(all_namespaces=True)
    return [
        n["name"]
        for n in named
        if n["namespace"] == NAMESPACE and n["name"].startswith(SPARE_PREFIX)
    ]


def _wait_for_ready_spares(count: int) -> None:
    wait_until(lambda: len(_spare_names()) >= count, timeout=60, what="spares started")
    for name in _spare_names():
        ray.get(ray.get_actor(name, namespace=NAMESPACE).__ray_ready__.remote(), timeout=120)


def test_warm_workers_serve_one_user_and_exit_when_idle(
    ray_world: RayWorld,
    kubeapi: KubeAPI,
    kube_namespace: str,
    crd: CrdClient,
    storage: StorageConfig,
    store: LocalObjectStore,
) -> None:
    def run(user: str, gpus: list[int]) -> tuple[str, int]:
        job_id = allocated_job(crd, store, fn.report, user, node="node-a", gpus=gpus, user=user)
        job = wait_for_phase(crd, job_id, JOB_TERMINAL_PHASES)
        assert job.phase is JobPhase.COMPLETED, job.status
        return _ran_in(store, job_id)

    with running_executor(kubeapi, kube_namespace, storage, warm=WARM):
        _wait_for_ready_spares(3)  # one per node
        first_name, first_pid = run("alice", [0])
        assert first_name.startswith(SPARE_PREFIX), "the first job took a spare started ahead"
        assert run("alice", [0]) == (first_name, first_pid), "the same user's warm process"
        other_name, other_pid = run("bob", [0])
        assert other_pid != first_pid, "another user never shares a process"
        _, elsewhere_pid = run("alice", [1])
        assert elsewhere_pid != first_pid, "other GPUs: another process"
        leaving = allocated_job(crd, store, fn.leave_a_thread, 30, node="node-a", gpus=[1])
        assert wait_for_phase(crd, leaving, JOB_TERMINAL_PHASES).phase is JobPhase.COMPLETED
        _, left_pid = _ran_in(store, leaving)
        assert left_pid == elsewhere_pid, "the warm worker ran it"
        # the thread died with the job's container: the worker is as clean as before
        assert run("alice", [1])[1] == left_pid
        # idle: each worker ends itself after IDLE_S (the pool drops it a margin before)
        wait_until(lambda: process_gone(first_pid), timeout=IDLE_S + 20, what="the idle exit")
        assert run("alice", [0])[1] != first_pid


def test_a_dead_warm_worker_is_dropped_never_handed_an_attempt(
    ray_world: RayWorld, store: LocalObjectStore
) -> None:
    """A spare whose actor died (its node killed and back before the pool heard of it) has
    its readiness resolved all the same: the pool asks the GCS actor table and drops it."""
    pool = WarmPool(store, spares=1, max_idle=2, idle_seconds=IDLE_S)
    pool.refill(["node-b"])
    spare = next(w for w in pool._idle["node-b"] if w.user is None)
    ray.wait([spare.ready], timeout=120, fetch_local=False)  # its process runs
    ray.kill(spare.actor, no_restart=True)
    wait_until(lambda: not actor_alive(spare.actor), timeout=30, what="the spare to die")
    assert pool.take("node-b", "alice", {}) is None
    assert pool._idle["node-b"] == []  # dropped
    pool.refill(["node-b"])
    fresh = next(w for w in pool._idle["node-b"] if w.user is None)
    ray.wait([fresh.ready], timeout=120, fetch_local=False)
    taken = pool.take("node-b", "alice", {})
    assert taken is not None and taken.name == fresh.name
    ray.kill(taken.actor, no_restart=True)
