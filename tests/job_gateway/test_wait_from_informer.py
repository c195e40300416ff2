"""The long poll starts from the informer's copy: a wait on a job the gateway's informer
holds reads nothing from the store until the wait runs out, and a finish still wakes it."""

from __future__ import annotations

import asyncio
from typing import Any

from gridweave_controller import Job, JobPhase
from job_gateway.finish_waiters import FinishWaiters
from job_gateway.services.jobs import wait_for_job


def _job(phase: str) -> Job:
    return Job.from_raw(
        {
            "metadata": {"name": "job-waited", "resourceVersion": "1"},
            "spec": {"userId": "alice", "functionRef": "f", "vramMb": 1024, "vendor": "any"},
            "status": {"phase": phase},
        }
    )


class _Store:
    """A CRD client whose reads are counted (the store's copy: Running)."""

    def __init__(self) -> None:
        self.reads = 0

    async def get_job(self, job_id: str) -> Job:
        self.reads += 1
        return _job("Running")


def _wait(store: _Store, waiters: FinishWaiters, copy: Job | None, wait_s: float) -> Any:
    return wait_for_job(
        crd=store,  # type: ignore[arg-type]
        waiters=waiters,
        job_id="job-waited",
        wait_s=wait_s,
        informed=lambda _name: copy,
    )


def test_a_finish_wakes_a_wait_that_read_nothing() -> None:
    async def scenario() -> tuple[Job, int]:
        store, waiters = _Store(), FinishWaiters()
        waiting = asyncio.create_task(_wait(store, waiters, _job("Running"), 20))
        await asyncio.sleep(0.05)
        waiters.job_changed(_job("Completed"))
        return await asyncio.wait_for(waiting, 5), store.reads

    finished, reads = asyncio.run(scenario())
    assert finished.phase is JobPhase.COMPLETED and reads == 0


def test_a_wait_that_runs_out_reads_the_store() -> None:
    store = _Store()
    job = asyncio.run(_wait(store, FinishWaiters(), _job("Allocated"), 0.1))
    assert job.phase is JobPhase.RUNNING and store.reads == 1  # the store's, not the copy's


def test_without_a_copy_or_a_wait_the_store_answers() -> None:
    store = _Store()
    assert asyncio.run(_wait(store, FinishWaiters(), None, 0.1)).phase is JobPhase.RUNNING
    assert asyncio.run(_wait(store, FinishWaiters(), _job("Allocated"), 0)).phase is (
        JobPhase.RUNNING
    )
    assert store.reads == 2
