"""A map's workers on Ray, in their containers: each worker runs its chunks, stores each
chunk's record once, and answers its progress as its result (its digest in the job's
status); a failed input is recorded and the others go on; a worker's next attempt skips
the chunks already stored."""

from __future__ import annotations

import hashlib
import json
import math

import cloudpickle
import pytest

from gridweave_clients.maps import WorkerProgress, chunk_record, read_chunk_record
from gridweave_controller import CrdClient, JobPhase
from gridweave_controller.phases import JOB_TERMINAL_PHASES
from gridweave_runtime.storage import LocalObjectStore, StorageConfig
from gridweave_runtime.storage.maps import map_objects
from tests.job_gateway import execution_functions as fn
from tests.job_gateway.execution_factories import (
    RayWorld,
    new_job_id,
    running_executor,
    wait_for_phase,
)
from tests.support.kubeapi import KubeAPI

pytestmark = pytest.mark.kubeapi


def stored_map(store: LocalObjectStore, items: list[int], chunk_items: int) -> str:
    """A map's function and input chunks in the store, as the platform stores them."""
    map_id = new_job_id("map")
    objects = map_objects(map_id)
    store.put(objects.function, cloudpickle.dumps(fn.square_or_refuse))
    for chunk in range(math.ceil(len(items) / chunk_items)):
        part = items[chunk * chunk_items : (chunk + 1) * chunk_items]
        store.put(objects.inputs(chunk), cloudpickle.dumps([((x,), {}) for x in part]))
    return map_id


def map_worker(
    crd: CrdClient,
    store: LocalObjectStore,
    map_id: str,
    *,
    worker: int,
    workers: int,
    items: int,
    chunk_items: int,
    node: str,
    retries: int = 0,
) -> str:
    job_id = f"{map_id}-w{worker}"
    crd.create_job(
        job_id,
        "alice",
        store.uri(map_objects(map_id).function),
        vram_mb=1024,
        timeout_seconds=120,
        map_share={
            "map_id": map_id,
            "worker": worker,
            "workers": workers,
            "items": items,
            "chunk_items": chunk_items,
            "retries": retries,
        },
    )
    crd.set_job_allocated(job_id, node, [0])
    return job_id


def values(store: LocalObjectStore, map_id: str, chunks: int) -> list[object]:
    """Every input's value (or its error's message), in input order."""
    found: list[object] = []
    for chunk in range(chunks):
        _, _, results = read_chunk_record(store.get(store.uri(map_objects(map_id).outputs(chunk))))
        for result, payload in results:
            found.append(cloudpickle.loads(payload) if result.status == "ok" else result.message)
    return found


class TestMapWorkers:
    def test_two_workers_run_their_chunks_and_a_failed_input_does_not_stop_the_rest(
        self,
        ray_world: RayWorld,
        kubeapi: KubeAPI,
        kube_namespace: str,
        crd: CrdClient,
        storage: StorageConfig,
        store: LocalObjectStore,
    ) -> None:
        items = list(range(23))
        map_id = stored_map(store, items, chunk_items=4)  # 6 chunks
        with running_executor(kubeapi, kube_namespace, storage):
            jobs = [
                map_worker(
                    crd, store, map_id, worker=k, workers=2, items=23, chunk_items=4, node=node
                )
                for k, node in ((0, "node-a"), (1, "node-c"))
            ]
            done = [wait_for_phase(crd, job_id, JOB_TERMINAL_PHASES) for job_id in jobs]
        assert [job.phase for job in done] == [JobPhase.COMPLETED] * 2
        progress = []
        for job in done:
            result = store.get(job.status.result_ref or "")
            assert hashlib.sha256(result).hexdigest() == job.status.result_sha256
            progress.append(WorkerProgress.model_validate_json(result))
        assert [sorted(p.chunks, key=int) for p in progress] == [["0", "2", "4"], ["1", "3", "5"]]
        assert sum(p.done for p in progress) == 20 and sum(p.failed for p in progress) == 3
        expected = [
            x * x if x % 7 or not x else f"ValueError: {x} is a multiple of 7" for x in items
        ]
        assert values(store, map_id, 6) == expected
        for p in progress:  # every chunk record is the one its digest names
            for chunk, digest in p.chunks.items():
                record = store.get(store.uri(map_objects(map_id).outputs(int(chunk))))
                assert hashlib.sha256(record).hexdigest() == digest

    def test_a_workers_next_attempt_skips_the_chunks_already_stored(
        self,
        ray_world: RayWorld,
        kubeapi: KubeAPI,
        kube_namespace: str,
        crd: CrdClient,
        storage: StorageConfig,
        store: LocalObjectStore,
    ) -> None:
        map_id = stored_map(store, [1, 2, 3, 4], chunk_items=2)
        # an earlier attempt stored chunk 0 (with values the function would never give)
        earlier = chunk_record(0, 0, [({"status": "ok"}, cloudpickle.dumps(-1))] * 2)
        store.put(map_objects(map_id).outputs(0), earlier)
        with running_executor(kubeapi, kube_namespace, storage):
            job_id = map_worker(
                crd, store, map_id, worker=0, workers=1, items=4, chunk_items=2, node="node-a"
            )
            job = wait_for_phase(crd, job_id, JOB_TERMINAL_PHASES)
        assert job.phase is JobPhase.COMPLETED
        assert values(store, map_id, 2) == [-1, -1, 9, 16]  # chunk 0 was not run again
        progress = json.loads(store.get(job.status.result_ref or ""))
        assert (progress["done"], progress["failed"]) == (4, 0)
