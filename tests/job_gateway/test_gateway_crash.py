"""The gateway killed with -9 with 50 jobs in flight, then started again.

Real parts throughout: the gateway as its own process (``python -m job_gateway``) on the
real apiserver, the session's three-node Ray (``RAY_ADDRESS``), metering_service on
PostgreSQL settling holds with credit_service. While the jobs run, a watch on the CRDs
checks after every change that no GPU holds more VRAM than it has; each run of a job writes
its span to a file, so a job run twice at once shows as two overlapping spans. After the
restart every job must reach a terminal phase and be billed by exactly one usage record,
the one its ``UsageReported`` mark names.
"""

from __future__ import annotations

import itertools
import os
import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import cloudpickle
import httpx
import pytest
import yaml

from gridweave_controller import CrdClient, Job, JobPhase
from gridweave_controller.phases import JOB_TERMINAL_PHASES
from gridweave_runtime.storage import LocalObjectStore, input_objects
from gridweave_runtime.storage.maps import map_objects
from job_gateway.scheduler import JOB_HOLDING_PHASES
from tests.job_gateway import execution_functions as fn
from tests.job_gateway.execution_factories import INVENTORY_YAML, RayWorld, new_job_id
from tests.job_gateway.gateway_factories import blocking_crd, submit_body
from tests.job_gateway.metering_factories import Metering, usage_mark
from tests.support.credentials import service_auth_env
from tests.support.credit_server import AUTH_HEADERS, INTERNAL_TOKEN
from tests.support.kubeapi import KubeAPI, namespace_for_test
from tests.support.service_process import service_process
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

JOBS = 50
RUN_SECONDS = 1.5
TERMINAL = JOB_TERMINAL_PHASES
GpuKey = tuple[str, int]


def gpu_capacity() -> dict[GpuKey, int]:
    """VRAM (MiB) of every GPU of the test cluster's inventory."""
    nodes = yaml.safe_load(INVENTORY_YAML)["nodes"]
    return {(node["name"], gpu["index"]): gpu["vram_mb"] for node in nodes for gpu in node["gpus"]}


class VramWatch:
    """Follows every job of a namespace and checks each GPU's held VRAM after every change."""

    def __init__(self, crd: CrdClient) -> None:
        self.capacity = gpu_capacity()
        self.jobs: dict[str, Job] = {}
        self.changes = 0
        self.violations: list[str] = []
        self._watch = crd.watch_jobs()
        self._thread = threading.Thread(target=self._follow, name="vram-watch", daemon=True)

    def _follow(self) -> None:
        for event in self._watch:
            job = event.object
            if job is None:  # a bookmark
                continue
            if event.type == "DELETED":
                self.jobs.pop(job.name, None)
            else:
                self.jobs[job.name] = job
            self.changes += 1
            self._check()

    def _check(self) -> None:
        held: Counter[GpuKey] = Counter()
        for job in self.jobs.values():
            if job.phase in JOB_HOLDING_PHASES and job.status.node is not None:
                for index in job.status.gpu_indices:
                    held[(job.status.node, index)] += job.spec.vram_mb
        for gpu, vram_mb in held.items():
            if vram_mb > self.capacity[gpu]:
                self.violations.append(f"{gpu} holds {vram_mb} MiB of {self.capacity[gpu]}")

    def __enter__(self) -> VramWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._watch.close()
        self._thread.join(10)


def job_mix(index: int) -> dict[str, object]:
    """Jobs of three shapes: one NVIDIA GPU shared by two, two whole NVIDIA GPUs, one AMD."""
    if index % 5 == 4:
        return {"vram_mb": 20_000, "gpu_count": 2, "vendor": "nvidia"}
    if index % 5 == 3:
        return {"vram_mb": 40_000, "gpu_count": 1, "vendor": "amd"}
    return {"vram_mb": 12_000, "gpu_count": 1, "vendor": "nvidia"}


@contextmanager
def gateway_process(
    kubeapi: KubeAPI,
    ray_address: str,
    namespace: str,
    state: Path,
    metering_url: str,
    *,
    warm: bool = True,
) -> Iterator[tuple[str, int]]:
    """``python -m job_gateway`` running jobs on the given Ray (``warm``: with spares and
    released workers, else one worker per attempt); (its URL, its pid)."""
    state.mkdir(parents=True, exist_ok=True)
    inventory = state / "inventory.yaml"
    inventory.write_text(INVENTORY_YAML)
    env = {
        **service_auth_env(INTERNAL_TOKEN),
        "GRIDWEAVE_STATE_DIR": str(state),
        "GATEWAY_STORAGE_DIR": str(state.parent / "objects"),
        "GATEWAY_CRD_TRANSPORT": "direct",
        "GATEWAY_KUBECONFIG": str(kubeapi.kubeconfig),
        "GATEWAY_NAMESPACE": namespace,
        "GATEWAY_INVENTORY_SOURCE": "file",
        "GATEWAY_INVENTORY_FILE": str(inventory),
        "GATEWAY_PASS_INTERVAL_SECONDS": "1",
        "GATEWAY_EXECUTOR_POLL_SECONDS": "0.1",
        # the jobs record their runs in files of the host (the bookkeeping is tested here)
        "GATEWAY_SANDBOX_RUNTIME": "none",
        "RAY_ADDRESS": ray_address,
        "METERING_SERVICE_URL": metering_url,
        **({} if warm else {"GATEWAY_WARM_SPARES_PER_NODE": "0"}),
        **({} if warm else {"GATEWAY_MAX_IDLE_WORKERS_PER_NODE": "0"}),
    }
    with service_process("job_gateway", env, prefix="GATEWAY_", log=state / "gateway.log") as (
        url,
        process,
    ):
        yield url, process.pid


def spans(runs_dir: Path) -> dict[str, list[tuple[float, float]]]:
    """Each job's runs as (start, end) wall-clock spans, from the files the runs wrote."""
    found: dict[str, list[tuple[float, float]]] = {}
    for path in runs_dir.iterdir():
        job_id = path.name.rsplit(".", 1)[0]
        times = [float(line) for line in path.read_text().split()]
        start, end = times[0], times[1] if len(times) > 1 else float("inf")
        found.setdefault(job_id, []).append((start, end))
    return found


def run_counts(runs_dir: Path) -> Counter[str]:
    """How many times each job's function ran: one file per run (its process's pid)."""
    return Counter(path.name.rsplit(".", 1)[0] for path in runs_dir.iterdir())


def submit_recorded_jobs(
    url: str, metering: Metering, store: LocalObjectStore, runs_dir: Path, user_id: str, count: int
) -> list[str]:
    """``count`` jobs of the three shapes, each recording its run in ``runs_dir``."""
    ids = []
    with httpx.Client(base_url=url, headers=AUTH_HEADERS, timeout=30) as http:
        for index in range(count):
            job_id = new_job_id("crash")
            inputs = input_objects(job_id)
            metering.credit.place_hold(user_id, 1_000_000, job_id)
            body = submit_body(
                job_id,
                user_id=user_id,
                function_ref=store.put(inputs.function, cloudpickle.dumps(fn.record_run)),
                args_ref=store.put(
                    inputs.args, cloudpickle.dumps(((str(runs_dir), job_id, RUN_SECONDS), {}))
                ),
                timeout_seconds=300,
                max_retries=2,
                **job_mix(index),
            )
            response = http.post("/v1/jobs", json=body)
            assert response.status_code == 201, response.text
            ids.append(job_id)
    return ids


def overlapping(runs: list[tuple[float, float]]) -> bool:
    ordered = sorted(runs)
    return any(later[0] < earlier[1] for earlier, later in itertools.pairwise(ordered))


class TestGatewayKilled:
    def test_killed_with_50_jobs_in_flight_every_job_ends_billed_once(
        self, ray_world: RayWorld, kubeapi: KubeAPI, metering: Metering, tmp_path: Path
    ) -> None:
        user_id = f"u-{uuid.uuid4().hex[:10]}"
        metering.credit.fund(user_id, JOBS * 1_000_000)
        namespace = f"gw-crash-{uuid.uuid4().hex[:8]}"
        runs_dir = tmp_path / "runs"
        runs_dir.mkdir()
        store = LocalObjectStore(tmp_path / "objects")
        ray_address = ray_world.cluster.address
        with (
            namespace_for_test(kubeapi, namespace),
            blocking_crd(kubeapi.kubeconfig, namespace) as crd,
            VramWatch(crd) as watch,
        ):
            with gateway_process(
                kubeapi, ray_address, namespace, tmp_path / "first", metering.url
            ) as (url, pid):
                ids = []
                with httpx.Client(base_url=url, headers=AUTH_HEADERS, timeout=30) as http:
                    for index in range(JOBS):
                        job_id = new_job_id("crash")
                        inputs = input_objects(job_id)
                        metering.credit.place_hold(user_id, 1_000_000, job_id)
                        body = submit_body(
                            job_id,
                            user_id=user_id,
                            function_ref=store.put(
                                inputs.function, cloudpickle.dumps(fn.record_run)
                            ),
                            args_ref=store.put(
                                inputs.args,
                                cloudpickle.dumps(((str(runs_dir), job_id, RUN_SECONDS), {})),
                            ),
                            timeout_seconds=300,
                            max_retries=2,
                            **job_mix(index),
                        )
                        response = http.post("/v1/jobs", json=body)
                        assert response.status_code == 201, response.text
                        ids.append(job_id)

                def phases() -> Counter[JobPhase]:
                    return Counter(job.phase for job in list(watch.jobs.values()))

                # mid-stream: some finished (reports sent or in flight), some running
                wait_until(
                    lambda: (
                        sum(phases()[p] for p in TERMINAL) >= 5 and phases()[JobPhase.RUNNING] >= 3
                    ),
                    timeout=180,
                    what="jobs finishing and running at once",
                )
                in_flight = JOBS - sum(phases()[p] for p in TERMINAL)
                os.kill(pid, signal.SIGKILL)
            with gateway_process(
                kubeapi, ray_address, namespace, tmp_path / "second", metering.url
            ):
                wait_until(
                    lambda: all(
                        (job := watch.jobs.get(job_id)) is not None
                        and job.phase in TERMINAL
                        and usage_mark(job) is not None
                        for job_id in ids
                    ),
                    timeout=300,
                    what="every job finished and reported",
                )
            final = {job_id: crd.get_job(job_id) for job_id in ids}
        assert in_flight >= 10, "the gateway was killed with jobs in flight"
        assert watch.changes > 3 * JOBS  # the watch saw the jobs move
        assert watch.violations == []
        assert {job.phase for job in final.values()} == {JobPhase.COMPLETED}
        ran = spans(runs_dir)
        assert set(ran) == set(ids)
        assert [job_id for job_id, runs in ran.items() if overlapping(runs)] == []
        records = metering.records(user_id)
        assert Counter(record["job_id"] for record in records) == Counter(ids)
        marks = {job_id: usage_mark(job) for job_id, job in final.items()}
        assert marks == {record["job_id"]: str(record["id"]) for record in records}


class TestGatewayKilledTwice:
    @pytest.mark.parametrize("warm", [True, False], ids=["warm-workers", "worker-per-attempt"])
    def test_killed_twice_seconds_apart_no_job_runs_twice(
        self,
        ray_world: RayWorld,
        kubeapi: KubeAPI,
        metering: Metering,
        tmp_path: Path,
        warm: bool,
    ) -> None:
        """Killed while it hands attempts over, restarted, killed again a few seconds later
        (handing over again), restarted: every job runs exactly once (its runs counted, not
        its overlaps), finishes, and is billed by one record."""
        count = 30
        user_id = f"u-{uuid.uuid4().hex[:10]}"
        metering.credit.fund(user_id, count * 1_000_000)
        namespace = f"gw-crash2-{uuid.uuid4().hex[:8]}"
        runs_dir = tmp_path / "runs"
        runs_dir.mkdir()
        store = LocalObjectStore(tmp_path / "objects")
        address = ray_world.cluster.address

        def gateway(name: str) -> Any:
            return gateway_process(
                kubeapi, address, namespace, tmp_path / name, metering.url, warm=warm
            )

        with (
            namespace_for_test(kubeapi, namespace),
            blocking_crd(kubeapi.kubeconfig, namespace) as crd,
            VramWatch(crd) as watch,
        ):

            def handed_over() -> int:
                return sum(
                    1
                    for job in list(watch.jobs.values())
                    if job.phase in (JobPhase.ALLOCATED, JobPhase.RUNNING)
                )

            with gateway("first") as (url, pid):
                ids = submit_recorded_jobs(url, metering, store, runs_dir, user_id, count)
                wait_until(lambda: handed_over() >= 3, timeout=180, what="attempts handed over")
                os.kill(pid, signal.SIGKILL)
            with gateway("second") as (_, pid):
                wait_until(lambda: handed_over() >= 3, timeout=180, what="attempts handed over")
                time.sleep(2)  # handing over again when it dies
                os.kill(pid, signal.SIGKILL)
            with gateway("third"):
                wait_until(
                    lambda: all(
                        (job := watch.jobs.get(job_id)) is not None
                        and job.phase in TERMINAL
                        and usage_mark(job) is not None
                        for job_id in ids
                    ),
                    timeout=300,
                    what="every job finished and reported",
                )
            final = {job_id: crd.get_job(job_id) for job_id in ids}
        assert {job.phase for job in final.values()} == {JobPhase.COMPLETED}
        assert {job.status.attempts for job in final.values()} == {0}  # none lost, none rerun
        assert run_counts(runs_dir) == Counter(ids)  # each ran once: one record per run
        assert watch.violations == []
        records = metering.records(user_id)
        assert Counter(record["job_id"] for record in records) == Counter(ids)


class TestMapKilledMidway:
    def test_a_map_whose_gateway_is_killed_twice_runs_each_input_once(
        self, ray_world: RayWorld, kubeapi: KubeAPI, metering: Metering, tmp_path: Path
    ) -> None:
        """Four workers over 60 inputs (0.1 s each) in chunks of 5; the gateway killed
        while they run and again seconds after its restart: every worker completes, every
        input ran exactly once (a record per run, counted), each worker billed once."""
        items, chunk_items, workers = 60, 5, 4
        user_id = f"u-{uuid.uuid4().hex[:10]}"
        metering.credit.fund(user_id, workers * 1_000_000)
        namespace = f"gw-crash-map-{uuid.uuid4().hex[:8]}"
        runs_dir = tmp_path / "runs"
        runs_dir.mkdir()
        store = LocalObjectStore(tmp_path / "objects")
        map_id = new_job_id("map")
        objects = map_objects(map_id)
        function_ref = store.put(objects.function, cloudpickle.dumps(fn.record_input))
        for chunk in range(items // chunk_items):
            calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
                ((str(runs_dir), x, 0.1), {})
                for x in range(chunk * chunk_items, (chunk + 1) * chunk_items)
            ]
            store.put(objects.inputs(chunk), cloudpickle.dumps(calls))
        address = ray_world.cluster.address
        with (
            namespace_for_test(kubeapi, namespace),
            blocking_crd(kubeapi.kubeconfig, namespace) as crd,
            VramWatch(crd) as watch,
        ):

            def running() -> int:
                return sum(1 for job in list(watch.jobs.values()) if job.phase is JobPhase.RUNNING)

            ids = [f"{map_id}-w{k}" for k in range(workers)]

            def gateway(name: str) -> Any:
                return gateway_process(kubeapi, address, namespace, tmp_path / name, metering.url)

            with gateway("first") as (url, pid):
                with httpx.Client(base_url=url, headers=AUTH_HEADERS, timeout=30) as http:
                    for k, job_id in enumerate(ids):
                        metering.credit.place_hold(user_id, 1_000_000, job_id)
                        share = {
                            "map_id": map_id,
                            "worker": k,
                            "workers": workers,
                            "items": items,
                            "chunk_items": chunk_items,
                        }
                        body = submit_body(
                            job_id,
                            user_id=user_id,
                            function_ref=function_ref,
                            vram_mb=12_000,
                            vendor="nvidia",
                            timeout_seconds=300,
                            max_retries=2,
                            map=share,
                        )
                        response = http.post("/v1/jobs", json=body)
                        assert response.status_code == 201, response.text
                wait_until(lambda: running() >= 2, timeout=180, what="workers running")
                os.kill(pid, signal.SIGKILL)
            with gateway_process(
                kubeapi, address, namespace, tmp_path / "second", metering.url
            ) as (
                _,
                pid,
            ):
                time.sleep(2)
                os.kill(pid, signal.SIGKILL)
            with gateway("third"):
                wait_until(
                    lambda: all(
                        (job := watch.jobs.get(job_id)) is not None
                        and job.phase in TERMINAL
                        and usage_mark(job) is not None
                        for job_id in ids
                    ),
                    timeout=300,
                    what="every worker finished and reported",
                )
            final = {job_id: crd.get_job(job_id) for job_id in ids}
        assert {job.phase for job in final.values()} == {JobPhase.COMPLETED}
        assert run_counts(runs_dir) == Counter(str(x) for x in range(items))
        records = metering.records(user_id)
        assert Counter(record["job_id"] for record in records) == Counter(ids)
