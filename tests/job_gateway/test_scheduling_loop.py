"""The scheduling loop on the real Kubernetes API: Pending jobs placed, written as Allocated.

The loop keeps no state: a second gateway on the same namespace rebuilds the allocation map
from the CRDs and never places a job twice or onto VRAM already held.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from gridweave_clients.gateway.endpoints import EndpointResponse
from gridweave_controller import CrdClient, Endpoint, EndpointPhase, Job, JobPhase
from gridweave_controller.aio import AsyncCrdClient
from job_gateway.endpoints import EndpointSettings
from job_gateway.errors import EndpointStopped
from job_gateway.inventory import Inventory, InventoryFile
from job_gateway.scheduler import Scheduler
from job_gateway.scheduling import PassReport, SchedulingLoop
from job_gateway.services.endpoints import endpoint_response, wake_endpoint
from tests.job_gateway.endpoints.factories import endpoint_body
from tests.job_gateway.gateway_factories import new_job_id, running_gateway
from tests.support.kubeapi import KubeAPI
from tests.support.memory_store import AsyncMemoryStore, MemoryStore

pytestmark = pytest.mark.kubeapi

GIB = 1024
#: Two 80 GiB NVIDIA GPUs on one ready node.
TWO_GPUS = """
nodes:
  - name: gpu-a
    gpus:
      - {index: 0, vendor: nvidia, model: NVIDIA A100 80GB, vram_mb: 81920}
      - {index: 1, vendor: nvidia, model: NVIDIA A100 80GB, vram_mb: 81920}
"""
HELD = (JobPhase.ALLOCATED, JobPhase.RUNNING)
# a pass runs on every change: the interval only matters for aging, keep it out of the way
SETTINGS = {"pass_interval_seconds": 60.0}


def load_inventory_text(text: str) -> Inventory:
    """The inventory a static file with ``text`` declares."""
    return InventoryFile.model_validate(yaml.safe_load(text)).to_inventory()


def held_per_gpu(crd: CrdClient) -> dict[tuple[str, int], int]:
    """VRAM the CRDs hold on each GPU (Allocated or Running jobs)."""
    held: dict[tuple[str, int], int] = defaultdict(int)
    for job in crd.list_jobs():
        if job.phase in HELD:
            assert job.status.node is not None
            for index in job.status.gpu_indices:
                held[(job.status.node, index)] += job.spec.vram_mb
    return dict(held)


def wait_for_held(crd: CrdClient, ids: list[str], count: int) -> list[Job]:
    """Wait until ``count`` of the jobs ``ids`` hold GPUs; those jobs."""
    deadline = time.monotonic() + 30
    while True:
        held = [job for job in crd.list_jobs() if job.name in ids and job.phase in HELD]
        if len(held) >= count or time.monotonic() > deadline:
            assert len(held) == count
            return held
        time.sleep(0.05)


def wait_for_endpoint(
    crd: CrdClient, endpoint_id: str, until: Callable[[Endpoint], bool]
) -> Endpoint:
    """Wait (30 s at most) until the endpoint satisfies ``until``; the endpoint."""
    deadline = time.monotonic() + 30
    while not until(endpoint := crd.get_endpoint(endpoint_id)):
        assert time.monotonic() < deadline, endpoint.status
        time.sleep(0.05)
    return endpoint


def create(crd: CrdClient, vram_mb: int, **arguments: object) -> str:
    """A Pending job; its id."""
    job_id = new_job_id()
    crd.create_job(job_id, "alice", "file:///f.pkl", vram_mb=vram_mb, **arguments)  # type: ignore[arg-type]
    return job_id


def finish(crd: CrdClient, job_id: str) -> None:
    """Move an Allocated job through Running to Completed."""
    crd.set_job_running(job_id)
    crd.set_job_completed(job_id, 1.0)


class TestPlacing:
    def test_pending_jobs_are_allocated_within_vram_and_the_rest_wait(
        self, kubeapi: KubeAPI, tmp_path: Path
    ) -> None:
        with running_gateway(kubeapi, tmp_path, inventory_yaml=TWO_GPUS, **SETTINGS) as gw:
            ids = [create(gw.crd, 40 * GIB) for _ in range(5)]
            # which four: the oldest, ties (same second) broken by name
            placed = wait_for_held(gw.crd, ids, 4)
            # each GPU holds two 40 GiB jobs: full; the fifth waits
            assert held_per_gpu(gw.crd) == {("gpu-a", 0): 80 * GIB, ("gpu-a", 1): 80 * GIB}
            assert all(job.status.allocated_at is not None for job in placed)
            waiting = next(i for i in ids if gw.crd.get_job(i).phase is JobPhase.PENDING)
            # freeing one job's VRAM lets the waiting job in, on that GPU
            done = next(job for job in placed if job.name != waiting)
            finish(gw.crd, done.name)
            late = gw.crd.wait_for_job(waiting, HELD, timeout=30)
            assert late.status.gpu_indices == done.status.gpu_indices
            assert max(held_per_gpu(gw.crd).values()) <= 80 * GIB

    def test_a_multi_gpu_job_gets_both_gpus_of_the_node_or_waits(
        self, kubeapi: KubeAPI, tmp_path: Path
    ) -> None:
        with running_gateway(kubeapi, tmp_path, inventory_yaml=TWO_GPUS, **SETTINGS) as gw:
            small = create(gw.crd, 40 * GIB)
            gw.crd.wait_for_job(small, HELD, timeout=30)
            pair = create(gw.crd, 30 * GIB, gpu_count=2)
            both = gw.crd.wait_for_job(pair, HELD, timeout=30)
            assert both.status.gpu_indices == (0, 1)
            wide = create(gw.crd, 50 * GIB, gpu_count=2)
            cancelled = create(gw.crd, 1 * GIB)
            gw.crd.set_job_cancelled(cancelled)
            finish(gw.crd, pair)
            # 80 - 40 = 40 GiB left on the small job's GPU: the wide job still waits
            assert gw.crd.get_job(wide).phase is JobPhase.PENDING
            finish(gw.crd, small)
            assert gw.crd.wait_for_job(wide, HELD, timeout=30).status.gpu_indices == (0, 1)
            assert gw.crd.get_job(cancelled).phase is JobPhase.CANCELLED

    def test_a_higher_priority_job_is_placed_first(self, kubeapi: KubeAPI, tmp_path: Path) -> None:
        with running_gateway(kubeapi, tmp_path, inventory_yaml=TWO_GPUS, **SETTINGS) as gw:
            blockers = [create(gw.crd, 80 * GIB) for _ in range(2)]
            for job_id in blockers:
                gw.crd.wait_for_job(job_id, HELD, timeout=30)
            low = create(gw.crd, 80 * GIB, priority=0)
            high = create(gw.crd, 80 * GIB, priority=10)
            finish(gw.crd, blockers[0])
            gw.crd.wait_for_job(high, HELD, timeout=30)
            assert gw.crd.get_job(low).phase is JobPhase.PENDING


class TestRestart:
    def test_a_new_gateway_rebuilds_the_map_from_the_crds(
        self, kubeapi: KubeAPI, tmp_path: Path
    ) -> None:
        namespace_jobs: list[str] = []
        with running_gateway(kubeapi, tmp_path, inventory_yaml=TWO_GPUS, **SETTINGS) as first:
            namespace_jobs = [create(first.crd, 50 * GIB) for _ in range(2)]
            before = {i: first.crd.wait_for_job(i, HELD, timeout=30) for i in namespace_jobs}
            namespace = first.namespace
        # the first gateway is gone; its jobs still hold both GPUs (50 of 80 GiB each)
        with running_gateway(
            kubeapi, tmp_path, inventory_yaml=TWO_GPUS, namespace=namespace, **SETTINGS
        ) as second:
            for job_id, job in before.items():
                again = second.crd.get_job(job_id)
                assert again.metadata.resource_version == job.metadata.resource_version
            too_big = create(second.crd, 40 * GIB)
            fits = create(second.crd, 30 * GIB)
            second.crd.wait_for_job(fits, HELD, timeout=30)
            assert second.crd.get_job(too_big).phase is JobPhase.PENDING
            assert max(held_per_gpu(second.crd).values()) == 80 * GIB


class TestFailedWrites:
    def test_a_failed_write_releases_its_hold_and_the_job_waits_again(self) -> None:
        async def scenario() -> tuple[PassReport, int, PassReport]:
            store = MemoryStore()
            crd = AsyncCrdClient(AsyncMemoryStore(store), "gridweave")
            scheduler = Scheduler(load_inventory_text(TWO_GPUS))
            loop = SchedulingLoop(crd, scheduler, pass_interval=60, max_parallel_writes=4)
            gone = await crd.create_job("gone", "alice", "file:///f", vram_mb=80 * GIB)
            kept = await crd.create_job("kept", "alice", "file:///f", vram_mb=80 * GIB)
            loop.follow(gone)
            loop.follow(kept)
            await crd.delete_job("gone")  # deleted before the informer could say so
            first = await loop.run_pass()
            held = len(scheduler.allocations)
            loop.forget("gone")
            loop.follow(await crd.get_job("kept"))  # Allocated now: no longer waiting
            second = await loop.run_pass()
            return first, held, second

        first, held, second = asyncio.run(scenario())
        assert (first.written, first.failed) == (1, 1)
        assert held == 1  # only the job whose write succeeded holds VRAM
        assert second.decision.placements == ()


async def fill_both_gpus(crd: AsyncCrdClient, loop: SchedulingLoop, scheduler: Scheduler) -> None:
    """Jobs ``job-0`` and ``job-1`` take both GPUs of ``TWO_GPUS`` whole."""
    for name in ("job-0", "job-1"):
        loop.follow(await crd.create_job(name, "alice", "file:///f", vram_mb=80 * GIB))
        await loop.run_pass()
        job = await crd.get_job(name)
        scheduler.allocations.apply_job(job)
        loop.follow(job)


async def running_endpoint(crd: AsyncCrdClient) -> Endpoint:
    """Endpoint ``ep`` (1 GiB, custom) deployed on gpu-a's GPU 1 and Running."""
    await crd.create_endpoint("ep", "alice", vram_mb=GIB, mode="custom", function_ref="f")
    await crd.set_endpoint_deploying("ep", "gpu-a", [1])
    return await crd.set_endpoint_running("ep", "http://127.0.0.1:1/gw/ep")


class TestEndpointsPlaced:
    def test_pending_endpoints_and_jobs_share_the_gpus_of_one_map(self) -> None:
        async def scenario() -> tuple[PassReport, Endpoint, Job]:
            crd = AsyncCrdClient(AsyncMemoryStore(MemoryStore()), "gridweave")
            loop = SchedulingLoop(
                crd,
                Scheduler(load_inventory_text(TWO_GPUS)),
                pass_interval=60,
                max_parallel_writes=4,
            )
            endpoint = await crd.create_endpoint(
                "ep", "alice", vram_mb=80 * GIB, mode="transformers", model="m"
            )
            job = await crd.create_job("job", "alice", "file:///f", vram_mb=80 * GIB)
            loop.follow_endpoint(endpoint)
            loop.follow(job)
            report = await loop.run_pass()
            return report, await crd.get_endpoint("ep"), await crd.get_job("job")

        report, endpoint, job = asyncio.run(scenario())
        assert (report.written, report.failed) == (2, 0)
        assert (endpoint.phase, job.phase) == (EndpointPhase.DEPLOYING, JobPhase.ALLOCATED)
        assert {endpoint.status.gpu_indices, job.status.gpu_indices} == {(0,), (1,)}

    def test_an_endpoint_holds_room_for_max_replicas_on_its_gpu(self) -> None:
        """Every replica Serve may start runs on the one placement: the map holds them all."""

        async def scenario() -> tuple[Endpoint, Job, int]:
            crd = AsyncCrdClient(AsyncMemoryStore(MemoryStore()), "gridweave")
            scheduler = Scheduler(load_inventory_text(TWO_GPUS))
            loop = SchedulingLoop(crd, scheduler, pass_interval=60, max_parallel_writes=4)
            loop.follow_endpoint(
                await crd.create_endpoint(
                    "ep", "alice", vram_mb=30 * GIB, max_replicas=2, mode="custom", function_ref="f"
                )
            )
            await loop.run_pass()
            endpoint = await crd.get_endpoint("ep")
            scheduler.allocations.apply_endpoint(endpoint)
            held = scheduler.allocations.held_mb("gpu-a", endpoint.status.gpu_indices[0])
            loop.follow_endpoint(endpoint)
            loop.follow(await crd.create_job("job", "alice", "file:///f", vram_mb=30 * GIB))
            await loop.run_pass()
            return endpoint, await crd.get_job("job"), held

        endpoint, job, held = asyncio.run(scenario())
        assert held == 60 * GIB  # two replicas of 30 GiB, not one
        assert job.phase is JobPhase.ALLOCATED
        assert job.status.gpu_indices != endpoint.status.gpu_indices  # 20 GiB left there

    def test_an_endpoint_of_any_vendor_records_the_placed_gpus_maker(self) -> None:
        """Billing prices an ``any`` endpoint at the vendor it was placed on (status.vendor)."""

        async def scenario() -> Endpoint:
            crd = AsyncCrdClient(AsyncMemoryStore(MemoryStore()), "gridweave")
            amd = TWO_GPUS.replace("nvidia", "amd").replace("NVIDIA A100 80GB", "AMD MI250X")
            scheduler = Scheduler(load_inventory_text(amd))
            loop = SchedulingLoop(crd, scheduler, pass_interval=60, max_parallel_writes=4)
            loop.follow_endpoint(
                await crd.create_endpoint(
                    "ep", "alice", vram_mb=GIB, mode="custom", function_ref="f", vendor="any"
                )
            )
            assert (await loop.run_pass()).written == 1
            return await crd.get_endpoint("ep")

        placed = asyncio.run(scenario())
        assert (placed.phase, placed.status.vendor) == (EndpointPhase.DEPLOYING, "amd")

    def test_a_stopped_endpoint_is_placed_again_once_per_wake(self) -> None:
        async def scenario() -> tuple[int, int, Endpoint, int]:
            crd = AsyncCrdClient(AsyncMemoryStore(MemoryStore()), "gridweave")
            scheduler = Scheduler(load_inventory_text(TWO_GPUS))
            loop = SchedulingLoop(crd, scheduler, pass_interval=60, max_parallel_writes=4)
            await running_endpoint(crd)
            stopped = await crd.set_endpoint_stopped("ep", "Idle", "no request")
            loop.follow_endpoint(stopped)
            not_woken = len((await loop.run_pass()).decision.placements)
            for _ in range(3):  # three concurrent wakes
                loop.wake_endpoint(stopped)
            woken = (await loop.run_pass()).written
            placed = await crd.get_endpoint("ep")
            scheduler.allocations.apply_endpoint(placed)
            loop.follow_endpoint(placed)
            loop.follow_endpoint(stopped)  # an older copy arriving late: the wake is spent
            await crd.set_endpoint_stopped("ep", "Idle", "no request")
            scheduler.allocations.apply_endpoint(await crd.get_endpoint("ep"))
            loop.follow_endpoint(await crd.get_endpoint("ep"))
            again = len((await loop.run_pass()).decision.placements)
            return not_woken, woken, placed, again

        not_woken, woken, placed, again = asyncio.run(scenario())
        assert (not_woken, woken, again) == (0, 1, 0)
        assert placed.phase is EndpointPhase.DEPLOYING and placed.status.node == "gpu-a"

    def test_a_pending_endpoint_without_room_says_why_once(self) -> None:
        async def scenario() -> tuple[Endpoint, int]:
            crd = AsyncCrdClient(AsyncMemoryStore(MemoryStore()), "gridweave")
            scheduler = Scheduler(load_inventory_text(TWO_GPUS))
            loop = SchedulingLoop(crd, scheduler, pass_interval=60, max_parallel_writes=4)
            for name in ("ep-0", "ep-1", "ep"):  # two take both GPUs whole: the third waits
                loop.follow_endpoint(
                    await crd.create_endpoint(
                        name, "alice", vram_mb=80 * GIB, mode="custom", function_ref="f"
                    )
                )
                await loop.run_pass()
            for placed in ("ep-0", "ep-1"):
                scheduler.allocations.apply_endpoint(await crd.get_endpoint(placed))
            waiting = await crd.get_endpoint("ep")
            loop.follow_endpoint(waiting)
            await loop.run_pass()  # the same reason: nothing written again
            again = await crd.get_endpoint("ep")
            version, then = waiting.metadata.resource_version, again.metadata.resource_version
            return waiting, int(then or 0) - int(version or 0)

        waiting, rewritten = asyncio.run(scenario())
        assert (waiting.phase, waiting.status.reason) == (EndpointPhase.PENDING, "WaitingForGpu")
        assert "a GPU with 81920 MiB free (any)" in (waiting.status.message or "")
        ready = next(c for c in waiting.status.conditions if c.type == "Ready")
        assert (ready.status, ready.reason) == ("False", "WaitingForGpu")
        assert rewritten == 0

    def test_a_lost_endpoint_keeps_its_reason_while_it_waits(self) -> None:
        """NodeLost (its node was lost, it is placed again) says more than "no room now"."""

        async def scenario() -> Endpoint:
            crd = AsyncCrdClient(AsyncMemoryStore(MemoryStore()), "gridweave")
            scheduler = Scheduler(load_inventory_text(TWO_GPUS))
            loop = SchedulingLoop(crd, scheduler, pass_interval=60, max_parallel_writes=4)
            await fill_both_gpus(crd, loop, scheduler)
            await running_endpoint(crd)
            loop.follow_endpoint(await crd.set_endpoint_pending("ep", "NodeLost", "gpu-a gone"))
            await loop.run_pass()
            return await crd.get_endpoint("ep")

        lost = asyncio.run(scenario())
        assert (lost.phase, lost.status.reason) == (EndpointPhase.PENDING, "NodeLost")
        assert lost.status.message == "gpu-a gone"

    def test_a_woken_endpoint_without_room_says_why_and_stays_stopped(self) -> None:
        """Nothing is written on a woken endpoint (it stays Stopped until placed): why it
        waits is answered with its view, until a GPU frees and it is placed."""

        async def scenario() -> tuple[EndpointResponse, bool, EndpointResponse, Endpoint]:
            crd = AsyncCrdClient(AsyncMemoryStore(MemoryStore()), "gridweave")
            scheduler = Scheduler(load_inventory_text(TWO_GPUS))
            loop = SchedulingLoop(crd, scheduler, pass_interval=60, max_parallel_writes=4)
            await fill_both_gpus(crd, loop, scheduler)
            await running_endpoint(crd)
            stopped = await crd.set_endpoint_stopped("ep", "Idle", "no request")
            loop.follow_endpoint(stopped)

            async def settled(_id: str, _wait: float, _version: str | None) -> None:
                await loop.run_pass()  # the pass the wait would see

            woken = await wake_endpoint(
                crd=crd, loop=loop, settled=settled, endpoint_id="ep", wait_s=1
            )
            waiting = endpoint_response(woken, loop.why_waking("ep"))
            version = (await crd.get_endpoint("ep")).metadata.resource_version
            unwritten = version == stopped.metadata.resource_version
            scheduler.allocations.remove(("job", "job-1"))  # a GPU is free again
            await loop.run_pass()
            placed = await crd.get_endpoint("ep")
            return waiting, unwritten, endpoint_response(placed, loop.why_waking("ep")), placed

        waiting, unwritten, after, placed = asyncio.run(scenario())
        assert (waiting.phase, waiting.reason) == (EndpointPhase.STOPPED, "Idle")
        assert waiting.waking_reason == "WaitingForGpu"
        assert "a GPU with 1024 MiB free (any)" in (waiting.waking_message or "")
        assert unwritten  # nothing written on it while it waited
        assert placed.phase is EndpointPhase.DEPLOYING and placed.status.gpu_indices == (1,)
        assert (after.waking_reason, after.waking_message) == (None, None)

    @pytest.mark.parametrize("reason", ["Deleted", "OutOfCredits", "Stopped"])
    def test_a_wake_deploys_only_an_idle_endpoint_again(self, reason: str) -> None:
        """A call that saw the endpoint idle just before its owner (or billing) stopped it
        must not deploy it again: 409 endpoint_stopped, nothing placed."""

        async def scenario() -> tuple[str, int]:
            crd = AsyncCrdClient(AsyncMemoryStore(MemoryStore()), "gridweave")
            scheduler = Scheduler(load_inventory_text(TWO_GPUS))
            loop = SchedulingLoop(crd, scheduler, pass_interval=60, max_parallel_writes=4)
            await running_endpoint(crd)
            loop.follow_endpoint(await crd.set_endpoint_stopped("ep", reason, "stopped"))

            async def settled(_id: str, _wait: float, _version: str | None) -> None:
                return None

            with pytest.raises(EndpointStopped) as refused:
                await wake_endpoint(crd=crd, loop=loop, settled=settled, endpoint_id="ep", wait_s=0)
            return refused.value.code, len((await loop.run_pass()).decision.placements)

        code, placed = asyncio.run(scenario())
        assert (code, placed) == ("endpoint_stopped", 0)


#: The gateway's simulated GPU beside a joined node's real one (smaller).
SIMULATED_AND_REAL = """
nodes:
  - name: gateway
    gpus:
      - {index: 0, vendor: nvidia, model: Simulated GPU, vram_mb: 81920, simulated: true}
  - name: joined
    gpus:
      - {index: 0, vendor: nvidia, model: NVIDIA L4, vram_mb: 24576}
"""


class TestVllmEndpointsOnRealGpus:
    def test_through_the_gateway_on_the_real_apiserver(
        self, kubeapi: KubeAPI, tmp_path: Path
    ) -> None:
        vllm = EndpointSettings(vllm_python="/opt/vllm/bin/python")
        with running_gateway(
            kubeapi,
            tmp_path,
            inventory_yaml=SIMULATED_AND_REAL,
            endpoint_settings=vllm,
            # binpack puts the 20 GiB job below on the real GPU, its tightest fit (fgd would
            # take the simulated one, where the 60 GiB left still hold such jobs)
            scheduling_policy="binpack",
            **SETTINGS,
        ) as gw:
            body = endpoint_body(new_job_id(), mode="vllm", model="/models/m")
            # larger than the real GPU, though the simulated one could hold it: a 422
            answer = gw.http.post("/v1/endpoints", json={**body, "vram_mb": 40 * GIB})
            assert answer.status_code == 422, answer.text
            field = answer.json()["error"]["fields"][0]
            assert field["field"] == "vram_mb"
            assert "largest real GPU is NVIDIA L4" in field["message"]
            job = create(gw.crd, 20 * GIB)
            assert gw.crd.wait_for_job(job, HELD, timeout=30).status.node == "joined"
            answer = gw.http.post("/v1/endpoints", json={**body, "vram_mb": 8 * GIB})
            assert answer.status_code == 201, answer.text
            endpoint_id = body["endpoint_id"]
            waiting = wait_for_endpoint(gw.crd, endpoint_id, lambda e: e.status.reason is not None)
            assert (waiting.phase, waiting.status.reason) == (EndpointPhase.PENDING, "RealGpuBusy")
            view = gw.http.get(f"/v1/endpoints/{endpoint_id}").json()
            assert view["reason"] == "RealGpuBusy" and "simulated" in view["message"]
            finish(gw.crd, job)  # the real GPU is free: the endpoint goes there
            placed = wait_for_endpoint(
                gw.crd, endpoint_id, lambda e: e.phase is EndpointPhase.DEPLOYING
            )
            assert (placed.status.node, placed.status.gpu_indices) == ("joined", (0,))
            assert placed.status.reason is None

    def test_a_vllm_endpoint_waits_for_the_real_gpu_and_says_why(self) -> None:
        async def scenario() -> tuple[Endpoint, int, Endpoint, Endpoint]:
            crd = AsyncCrdClient(AsyncMemoryStore(MemoryStore()), "gridweave")
            scheduler = Scheduler(load_inventory_text(SIMULATED_AND_REAL), policy="binpack")
            loop = SchedulingLoop(crd, scheduler, pass_interval=60, max_parallel_writes=4)
            job = await crd.create_job("job", "alice", "file:///f", vram_mb=20 * GIB)
            loop.follow(job)
            await loop.run_pass()  # the job takes the real GPU (the tightest)
            job = await crd.get_job("job")
            assert job.status.node == "joined"
            scheduler.allocations.apply_job(job)
            loop.follow(job)
            endpoint = await crd.create_endpoint(
                "ep", "alice", vram_mb=8 * GIB, mode="vllm", model="/m"
            )
            loop.follow_endpoint(endpoint)
            await loop.run_pass()
            waiting = await crd.get_endpoint("ep")
            version = waiting.metadata.resource_version
            await loop.run_pass()  # the same reason: nothing written again
            again = await crd.get_endpoint("ep")
            rewritten = int(again.metadata.resource_version or 0) - int(version or 0)
            scheduler.allocations.remove(("job", "job"))  # the job ended: the real GPU is free
            await loop.run_pass()
            return waiting, rewritten, again, await crd.get_endpoint("ep")

        waiting, rewritten, again, placed = asyncio.run(scenario())
        assert waiting.phase is EndpointPhase.PENDING
        assert waiting.status.reason == "RealGpuBusy"
        assert "only simulated GPUs have room" in (waiting.status.message or "")
        ready = next(c for c in waiting.status.conditions if c.type == "Ready")
        assert (ready.status, ready.reason) == ("False", "RealGpuBusy")
        assert rewritten == 0 and again.status.reason == "RealGpuBusy"
        assert (placed.phase, placed.status.node, placed.status.gpu_indices) == (
            EndpointPhase.DEPLOYING,
            "joined",
            (0,),
        )
        assert placed.status.reason is None

    def test_the_reason_is_rewritten_when_the_simulated_gpus_fill_and_free(self) -> None:
        """What is written stays true: once the simulated GPU is full too, the message no
        longer says it has room; once it has room again, it says so again."""

        async def scenario() -> list[tuple[str | None, str | None]]:
            crd = AsyncCrdClient(AsyncMemoryStore(MemoryStore()), "gridweave")
            scheduler = Scheduler(load_inventory_text(SIMULATED_AND_REAL), policy="binpack")
            loop = SchedulingLoop(crd, scheduler, pass_interval=60, max_parallel_writes=4)
            for name, vram in (("real", 20 * GIB), ("simulated", 78 * GIB)):
                job = await crd.create_job(name, "alice", "file:///f", vram_mb=vram)
                loop.follow(job)
                await loop.run_pass()  # the first takes the real GPU (the tightest)
                job = await crd.get_job(name)
                scheduler.allocations.apply_job(job)
                loop.follow(job)
            scheduler.allocations.remove(("job", "simulated"))  # the simulated GPU has room
            endpoint = await crd.create_endpoint(
                "ep", "alice", vram_mb=8 * GIB, mode="vllm", model="/m"
            )
            loop.follow_endpoint(endpoint)
            seen = []
            for change in ("simulated room", "simulated full", "simulated room again"):
                if change == "simulated full":
                    scheduler.allocations.apply_job(await crd.get_job("simulated"))
                elif change == "simulated room again":
                    scheduler.allocations.remove(("job", "simulated"))
                await loop.run_pass()
                status = (await crd.get_endpoint("ep")).status
                seen.append((status.reason, status.message))
            return seen

        seen = asyncio.run(scenario())
        assert [reason for reason, _ in seen] == ["RealGpuBusy"] * 3
        messages = [message or "" for _, message in seen]
        assert "only simulated GPUs have room" in messages[0]
        assert "no GPU, real or simulated, has room now" in messages[1]
        assert "only simulated GPUs have room" in messages[2]
