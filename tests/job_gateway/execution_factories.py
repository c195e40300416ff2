"""The execution tests' world: a multi-node Ray on this machine, job inputs, an executor rig.

The Ray cluster (Ray's own multi-node test utility) has three nodes, each labelled with
its Gridweave node (``gridweave.io/node``), and the inventory gives them simulated GPUs
(NVIDIA on node-a and node-c, AMD on node-b). The executor rig runs an :class:`Executor`
fed by a job informer on an event loop of its own, as the gateway does.
"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cloudpickle
import ray
import yaml
from ray.cluster_utils import Cluster

from gridweave_clients.platform import AsyncPlatformClient
from gridweave_controller import CrdClient, Job, JobPhase
from gridweave_controller.aio import connect
from gridweave_controller.informer import AsyncInformer
from gridweave_runtime.storage import ObjectStore, StorageConfig, input_objects
from job_gateway.execution import NODE_LABEL, Executor
from job_gateway.execution.image_pulls import PullTokens
from job_gateway.execution.settings import WarmSettings
from job_gateway.execution.worker import AttemptSpec
from job_gateway.inventory import Inventory, InventoryFile
from job_gateway.sandbox.attempt import SandboxedJob
from job_gateway.sandbox.settings import SandboxConfig, SandboxSettings
from tests.job_gateway import execution_functions
from tests.support.credit_server import INTERNAL_TOKEN
from tests.support.kubeapi import KubeAPI
from tests.support.waiting import wait_until

#: The Gridweave nodes of the test cluster, one Ray node each.
NODES = ("node-a", "node-b", "node-c")
INVENTORY_YAML = """
nodes:
  - name: node-a
    gpus:
      - {index: 0, vendor: nvidia, model: Simulated GPU, vram_mb: 24576, simulated: true}
      - {index: 1, vendor: nvidia, model: Simulated GPU, vram_mb: 24576, simulated: true}
  - name: node-b
    gpus:
      - {index: 0, vendor: amd, model: Simulated GPU, vram_mb: 65536, simulated: true}
      - {index: 1, vendor: amd, model: Simulated GPU, vram_mb: 65536, simulated: true}
  - name: node-c
    gpus:
      - {index: 0, vendor: nvidia, model: Simulated GPU, vram_mb: 24576, simulated: true}
      - {index: 1, vendor: nvidia, model: Simulated GPU, vram_mb: 24576, simulated: true}
      - {index: 2, vendor: nvidia, model: Simulated GPU, vram_mb: 24576, simulated: true}
      - {index: 3, vendor: nvidia, model: Simulated GPU, vram_mb: 24576, simulated: true}
"""
MIB = 1024 * 1024


def cluster_inventory() -> Inventory:
    """The inventory of the test cluster."""
    return InventoryFile.model_validate(yaml.safe_load(INVENTORY_YAML)).to_inventory()


@dataclass(frozen=True)
class RayWorld:
    """The running test cluster: Gridweave node name -> Ray node id."""

    cluster: Cluster
    node_ids: dict[str, str]


@contextmanager
def ray_test_cluster() -> Iterator[RayWorld]:
    """Three small Ray nodes on this machine, this process connected as the driver."""
    # the test functions travel by value, as a user's own module would
    cloudpickle.register_pickle_by_value(execution_functions)
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1,
            "object_store_memory": 100 * MIB,
            "labels": {NODE_LABEL: NODES[0]},
            "include_dashboard": False,
        },
    )
    try:
        for name in NODES[1:]:
            cluster.add_node(
                num_cpus=1,
                object_store_memory=80 * MIB,
                labels={NODE_LABEL: name},
            )
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        node_ids = {
            node["Labels"][NODE_LABEL]: node["NodeID"]
            for node in ray.nodes()  # type: ignore[no-untyped-call]
        }
        assert sorted(node_ids) == list(NODES)
        yield RayWorld(cluster, node_ids)
    finally:
        ray.shutdown()
        cluster.shutdown()  # type: ignore[no-untyped-call]
        cloudpickle.unregister_pickle_by_value(execution_functions)


def new_job_id(prefix: str = "run") -> str:
    """A fresh DNS-1123 job id."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def allocated_job(
    crd: CrdClient,
    store: ObjectStore,
    function: Callable[..., Any],
    *args: Any,
    node: str,
    gpus: list[int],
    job_id: str | None = None,
    vendor: str = "any",
    timeout_seconds: int = 120,
    max_retries: int = 0,
    user: str = "alice",
    image: str | None = None,
    pip: list[str] | None = None,
    **kwargs: Any,
) -> str:
    """Store the function and its arguments (cloudpickle), create the job (in ``image``,
    pinned; None: the node's default image; with ``pip``'s requirements), allocate it."""
    job_id = job_id or new_job_id()
    inputs = input_objects(job_id)
    function_ref = store.put(inputs.function, cloudpickle.dumps(function))
    args_ref = store.put(inputs.args, cloudpickle.dumps((args, kwargs)))
    crd.create_job(
        job_id,
        user,
        function_ref,
        vram_mb=1024,
        gpu_count=len(gpus),
        vendor=vendor,  # type: ignore[arg-type]
        timeout_seconds=timeout_seconds,
        max_retries=max_retries,
        args_ref=args_ref,
        image=image,
        pip=pip,
    )
    crd.set_job_allocated(job_id, node, gpus)
    return job_id


def wait_for_phase(
    crd: CrdClient, job_id: str, phases: AbstractSet[JobPhase], timeout: float = 60.0
) -> Job:
    """Poll until the job is in one of ``phases``."""
    return crd.wait_for_job(job_id, phases, timeout=timeout)


def process_gone(pid: int) -> bool:
    """True once no process has that id (or it is a zombie)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return True
    return state == "Z"


def read_pid(path: Path) -> int:
    """The pid a test function wrote, once it is there."""
    wait_until(lambda: path.exists() and path.read_text() != "", what=f"{path}")
    return int(path.read_text())


def marked_pid(marker: str, timeout: float = 60.0) -> int:
    """The host pid of the process whose command line carries ``marker`` (a job's
    ``sleep_marked``, inside its container), once it runs."""
    found: list[int] = []

    def look() -> bool:
        found[:] = _pids_with(marker)
        return bool(found)

    wait_until(look, timeout=timeout, what=f"a process marked {marker}")
    return found[0]


def worker_of(pid: int) -> int:
    """The worker actor's process above ``pid`` (a process of one of its containers)."""
    current = pid
    while current > 1:
        title = Path(f"/proc/{current}/cmdline").read_bytes()
        if b"JobWorker" in title:
            return current
        current = int(Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()[1])
    raise AssertionError(f"no worker process above {pid}")


def _pull_tokens(platform_url: str, registry: str) -> PullTokens:
    """The gateway's pull tokens, asked of the platform at ``platform_url``."""
    return PullTokens(
        AsyncPlatformClient(platform_url, INTERNAL_TOKEN), registry=registry, plain_http=True
    )


def unsandboxed() -> SandboxConfig:
    """The runner as a plain process of the worker (runtime ``none``): for the tests of the
    executor's own bookkeeping, whose functions record their runs in files of the host."""
    return SandboxSettings(runtime="none").config()


def new_marker() -> str:
    """A string no other process's command line carries."""
    return f"gw-marker-{uuid.uuid4().hex}"


def _pids_with(marker: str) -> list[int]:
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if marker.encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                pids.append(int(name))
        except OSError:
            continue
    return pids


def attempt_spec(
    job_id: str,
    function_ref: str,
    storage: StorageConfig,
    *,
    attempt: int = 0,
    args_ref: str | None = None,
    user: str = "user-1",
) -> AttemptSpec:
    """An attempt as the executor makes it, on one simulated NVIDIA GPU, in the node's
    default sandbox."""
    job = SandboxedJob(
        user_id=user,
        vendor="nvidia",
        gpu_indices=(0,),
        gpu_count=1,
        environment={"CUDA_VISIBLE_DEVICES": "0"},
    )
    return AttemptSpec(
        job_id, attempt, function_ref, args_ref, storage, SandboxSettings().config(), job
    )


@contextmanager
def running_executor(
    kubeapi: KubeAPI,
    namespace: str,
    storage: StorageConfig,
    *,
    poll_seconds: float = 0.05,
    warm: WarmSettings | None = None,
    sandbox: SandboxConfig | None = None,
    images_from: tuple[str, str] | None = None,
) -> Iterator[Executor]:
    """An executor fed by a job informer, on an event loop in a thread (the gateway's wiring);
    ``images_from``: (the platform's URL, the registry's host:port) for jobs' own images."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="executor-loop", daemon=True)
    thread.start()
    inventory = cluster_inventory()

    async def start() -> tuple[Any, Executor, AsyncInformer[Job]]:
        crd = await connect(kubeconfig=kubeapi.kubeconfig, namespace=namespace)
        executor = Executor(
            crd,
            storage,
            inventory=lambda: inventory,
            poll_seconds=poll_seconds,
            warm=warm,
            sandbox=sandbox,
            pull_tokens=None if images_from is None else _pull_tokens(*images_from),
        )
        informer: AsyncInformer[Job] = AsyncInformer(
            lambda known: crd.watch_jobs(known=known),
            on_add=executor.job_changed,
            on_update=lambda _old, new: executor.job_changed(new),
            on_delete=executor.job_deleted,
        )
        informer.start()
        assert await informer.wait_until_synced(60)
        executor.start()
        return crd, executor, informer

    crd, executor, informer = asyncio.run_coroutine_threadsafe(start(), loop).result(90)
    try:
        yield executor
    finally:

        async def stop() -> None:
            await informer.stop()
            await executor.stop()
            await crd.close()
            await asyncio.sleep(0.25)  # closed connections get their moment on the loop

        asyncio.run_coroutine_threadsafe(stop(), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
