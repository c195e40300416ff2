"""A stand-in for the gateway's execution in the SDK tests: the real function, run here.

The stack's gateway places jobs but does not execute them (no Ray in these tests). This
thread plays the worker's part on the same object store and job records: it takes each of
one user's Pending jobs, moves it to Running on the NotReady AMD node, loads the function
and the arguments the SDK pickled, calls it, and writes the result (cloudpickle) or the
traceback where the worker writes them, then completes (with the result's digest) or
fails the job.
"""

from __future__ import annotations

import hashlib
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import cloudpickle

from gridweave_clients.platform import PlatformClient
from gridweave_controller import InvalidTransition, JobPhase
from gridweave_runtime.storage import LocalObjectStore, attempt_objects
from tests.job_gateway.gateway_factories import GatewayServer

__all__ = ["running_worker"]


def run_job(gateway: GatewayServer, store: LocalObjectStore, job_id: str) -> None:
    """Run one Pending job to Completed or Failed, as the worker would."""
    gateway.crd.set_job_allocated(job_id, "gpu-b", [0])
    gateway.crd.set_job_running(job_id)
    spec = gateway.crd.get_job(job_id).spec
    function = cloudpickle.loads(store.get(spec.function_ref))
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = {}
    if spec.args_ref is not None:
        args, kwargs = cloudpickle.loads(store.get(spec.args_ref))
    objects = attempt_objects(job_id, 0)
    try:
        value = function(*args, **kwargs)
    except Exception as error:
        text = "".join(traceback.format_exception(error))
        store.put(objects.error, text.encode())
        line = f"{type(error).__qualname__}: {error}"
        gateway.crd.set_job_failed(job_id, "Exception", line, wall_seconds=0.5)
        return
    store.put(objects.stdout, f"ran {job_id}\n".encode())
    result = cloudpickle.dumps(value)
    uri = store.put(objects.result, result)
    digest = hashlib.sha256(result).hexdigest()  # as the worker records it
    gateway.crd.set_job_completed(job_id, 0.5, result_ref=uri, result_sha256=digest)


@contextmanager
def running_worker(gateway: GatewayServer, platform_url: str, api_key: str) -> Iterator[None]:
    """Run the user's Pending jobs as they come, until the block ends."""
    store = LocalObjectStore(gateway.storage_dir)
    stop = threading.Event()
    failures: list[BaseException] = []

    def loop() -> None:
        with PlatformClient(platform_url, api_key) as client:
            while not stop.wait(0.05):
                try:
                    for job in client.list_jobs(JobPhase.PENDING).jobs:
                        try:
                            run_job(gateway, store, job.job_id)
                        except InvalidTransition:
                            continue  # cancelled by the SDK since it was listed (a failed map)
                except BaseException as error:  # surfaced by the test below
                    failures.append(error)
                    return

    thread = threading.Thread(target=loop, name="sdk-test-worker", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not failures, failures
