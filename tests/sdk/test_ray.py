"""The SDK's whole path with execution on Ray: ``.remote`` to the platform, the gateway
placing the job and running it on the session's three-node Ray, the value back.

The stack is the platform tests' (platform, credit, metering, faucet on PostgreSQL, the
gateway on the real apiserver) with the gateway executing on the Ray of the execution tests
(simulated GPUs: NVIDIA on node-a and node-c, AMD on node-b).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ParamSpec, TypeVar

import cloudpickle
import httpx
import pytest

import gridweave as gw
from job_gateway.sandbox.settings import SandboxSettings
from tests.job_gateway.execution_factories import RayWorld
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.factories import PlatformServer
from tests.sdk import ray_functions
from tests.sdk.serving_factories import executing_gateway
from tests.support.credit_server import CreditServer
from tests.support.kubeapi import KubeAPI
from tests.support.sandbox import sandbox_config
from tests.support.user_project import FAILING_LINE, user_package

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]
#: The memory limit of a job's container per GPU, on this module's gateway.
SLICE_MEMORY_MB = 384

P = ParamSpec("P")
R = TypeVar("R")


@pytest.fixture(scope="module")
def gateway(
    ray_world: RayWorld,
    kubeapi: KubeAPI,
    metering: httpx.Client,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[GatewayServer]:
    """The real gateway executing jobs on the session's Ray (the platform fixture uses it)."""
    sandbox = SandboxSettings(rootfs=sandbox_config().rootfs, memory_mb_per_gpu=SLICE_MEMORY_MB)
    workdir = tmp_path_factory.mktemp("gateway-ray")
    with executing_gateway(kubeapi, metering, workdir, sandbox=sandbox) as server:
        yield server


@pytest.fixture
def funded(platform: PlatformServer, credit: CreditServer) -> Iterator[None]:
    """A funded user as the SDK's user; the test functions pickled by value."""
    user = platform.new_user()
    credit.fund(user.user_id, 10**9)
    gw.configure(url=platform.url, api_key=user.key)
    cloudpickle.register_pickle_by_value(ray_functions)
    try:
        yield
    finally:
        cloudpickle.unregister_pickle_by_value(ray_functions)


def _remote(fn: Callable[P, R]) -> gw.Function[P, R]:
    return gw.function(vram="8GiB", vendor="nvidia", timeout="2m")(fn)


@pytest.mark.usefixtures("funded")
def test_remote_map_logs_and_a_remote_exception_on_ray() -> None:
    shout = _remote(ray_functions.shout)
    handle = shout.spawn("hi", times=2)
    assert handle.result(timeout=120) == "HI!HI!"
    assert handle.logs().stdout.startswith("shouting hi\n")
    assert handle.status().node in ("node-a", "node-c")

    assert _remote(ray_functions.visible_devices).remote() is not None
    assert shout.map(["a", "b", "c"], concurrency=3) == ["A!", "B!", "C!"]

    with pytest.raises(ZeroDivisionError) as raised:
        _remote(ray_functions.reciprocal).remote(0)
    assert "in reciprocal" in raised.value.remote_traceback  # type: ignore[attr-defined]


@pytest.mark.usefixtures("funded")
def test_a_function_of_the_users_own_package_of_two_modules_and_its_traceback(
    tmp_path: Path,
) -> None:
    """Imported from a folder of the user's (not installed, not on the workers): its modules
    travel by value, and a remote traceback shows its lines."""
    with user_package(tmp_path / "project", name="gw_user_pkg") as funcs:
        assert _remote(funcs.compute).remote(4) == 15
        assert _remote(funcs.compute).map([1, 2]) == [6, 9]
        with pytest.raises(ValueError, match="bad value 2: scaled 6") as raised:
            _remote(funcs.fail).remote(2)
    trace = raised.value.remote_traceback  # type: ignore[attr-defined]
    assert FAILING_LINE in trace and "return helpers.explode(x)" in trace


@pytest.mark.usefixtures("funded")
def test_a_job_past_its_memory_raises_out_of_memory_naming_the_limit() -> None:
    with pytest.raises(gw.OutOfMemory) as raised:
        _remote(ray_functions.allocate).remote(4 * SLICE_MEMORY_MB)
    assert raised.value.limit_mb == SLICE_MEMORY_MB
    assert f"{SLICE_MEMORY_MB} MiB" in str(raised.value)
    assert raised.value.reason == "OutOfMemory"


@pytest.mark.usefixtures("funded")
def test_a_result_changed_in_the_store_is_refused_unread(gateway: GatewayServer) -> None:
    handle = _remote(ray_functions.shout).spawn("hi")
    assert handle.result(timeout=120) == "HI!"
    result_ref = gateway.crd.get_job(handle.job_id).status.result_ref
    assert result_ref is not None
    planted = Path(gateway.storage_dir) / "planted"
    # a pickle that would create a file when unpickled: the SDK must not load it
    stored = Path(result_ref.removeprefix("file://"))
    assert stored.is_file()
    stored.write_bytes(b"cos\nsystem\n(S'touch " + str(planted).encode() + b"'\ntR.")
    with pytest.raises(gw.PlatformUnreachable, match="not the one the job recorded"):
        handle.result(timeout=30)
    assert not planted.exists()


@pytest.mark.usefixtures("funded")
def test_a_functions_own_memory_limit_replaces_the_nodes_default() -> None:
    small = gw.function(vram="1GiB", vendor="nvidia", timeout="2m", memory="160MiB", cpu=0.5)
    with pytest.raises(gw.OutOfMemory) as raised:
        small(ray_functions.allocate).remote(SLICE_MEMORY_MB)
    assert raised.value.limit_mb == 160
    large = gw.function(vram="1GiB", vendor="nvidia", timeout="2m", memory="1GiB")
    assert large(ray_functions.allocate).remote(2 * SLICE_MEMORY_MB) == 2 * SLICE_MEMORY_MB
    handle = small(ray_functions.shout).spawn("x")
    assert handle.result(timeout=120) == "X!"
    assert (handle.status().memory_mb, handle.status().cpu_millis) == (160, 500)


@pytest.mark.usefixtures("funded")
def test_a_map_runs_as_one_map_of_workers_each_item_with_its_own_result() -> None:
    square = _remote(ray_functions.square_positive)
    items = [*range(30), -4, 5, -6]
    handle = square.spawn_map(items, concurrency=3)
    status = handle.wait(timeout=180)
    assert status.phase == "Completed" and status.finished
    assert (status.items, status.done, status.failed) == (33, 31, 2)
    assert len(status.workers) == 3 and all(w.phase == "Completed" for w in status.workers)
    assert status.chunks == len({(i // status.chunk_items) for i in range(33)})
    values = handle.results(return_exceptions=True)
    assert values[:30] == [x * x for x in range(30)] and values[31] == 25
    assert isinstance(values[30], ValueError) and str(values[30]) == "negative: -4"
    assert "in square_positive" in values[30].remote_traceback  # type: ignore[attr-defined]
    with pytest.raises(gw.MapItemFailed) as failed:
        handle.results()
    assert failed.value.index == 30 and isinstance(failed.value.__cause__, ValueError)
    assert _remote(ray_functions.power).starmap([(2, 3), (3, 2)]) == [8, 9]


@pytest.mark.usefixtures("funded")
def test_a_cancelled_map_keeps_the_results_it_made() -> None:
    slow = gw.function(vram="8GiB", vendor="nvidia", timeout="2m")(ray_functions.nap)
    handle = slow.spawn_map([0.3] * 40, concurrency=2)
    handle.wait(timeout=120, progress=lambda s: None if s.done < 4 else _stop(handle))
    status = handle.status()
    assert status.phase == "Cancelled" and status.finished
    assert 4 <= status.done < 40
    outcomes = list(handle.iter_outcomes())
    assert len(outcomes) >= 4 and all(error is None for _, _, error in outcomes)
    assert sorted(index for index, _, _ in outcomes) == [index for index, _, _ in outcomes]


def _stop(handle: gw.MapHandle[float]) -> None:
    if not handle.status().finished:
        handle.cancel()
