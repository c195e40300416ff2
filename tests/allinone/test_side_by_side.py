"""Two copies of ``gridweave up`` on one machine at once, each with a state directory and a
``GRIDWEAVE_PORT_OFFSET`` of its own: each runs a function on its own Ray and lists only
its own job, and neither attached to the other's Ray or Ray Serve (each listener on a
copy's Ray and Serve ports is a process of that copy's Ray head, and each gateway talks to
its own Ray's GCS only).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import psutil
import pytest

import gridweave as gw
from gridweave_allinone.settings import DEFAULT_PORTS
from gridweave_clients.platform import PlatformClient
from gridweave_runtime.local_ray import head_processes, ray_temp_dir
from tests.allinone import functions
from tests.support.allinone import (
    AllInOneProcess,
    functions_by_value,
    leftover_processes,
    reachable_workdir,
)

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres, pytest.mark.timeout(900)]


@pytest.fixture(autouse=True)
def own_functions(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with functions_by_value(monkeypatch, functions):
        yield


def _api_key(platform: AllInOneProcess) -> str:
    """The first admin's key, which ``gridweave up`` saved in the copy's config file."""
    return platform.config_file.read_text().split('api_key = "', 1)[1].split('"', 1)[0]


def _listening(port: int) -> set[int]:
    """The processes listening on ``port``, on any address."""
    return {
        c.pid
        for c in psutil.net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid
    }


def _gateway_peers(platform: AllInOneProcess) -> set[int]:
    """The ports the copy's gateway has TCP connections to."""
    gateways = []
    for line in leftover_processes(platform.state_dir):
        number, command = line.split(": ", 1)
        words = command.split()
        if "-m" in words[:-1] and words[words.index("-m") + 1] == "job_gateway":
            gateways.append(int(number))
    (pid,) = gateways
    return {c.raddr.port for c in psutil.Process(pid).net_connections(kind="tcp") if c.raddr}


def _assert_only_its_own_ray_and_serve(platform: AllInOneProcess, other: AllInOneProcess) -> None:
    own = set(head_processes(ray_temp_dir(platform.state_dir)))
    theirs = set(head_processes(ray_temp_dir(other.state_dir)))
    assert own and not own & theirs
    for service in ("ray", "serve"):  # Ray's GCS, Serve's HTTP proxy
        holders = _listening(DEFAULT_PORTS[service] + platform.port_offset)
        assert holders and holders <= own, (service, holders, own)
    peers = _gateway_peers(platform)
    assert DEFAULT_PORTS["ray"] + platform.port_offset in peers
    assert DEFAULT_PORTS["ray"] + other.port_offset not in peers


def test_two_copies_run_side_by_side_each_on_its_own_ray_and_serve() -> None:
    with ExitStack() as running:
        first = running.enter_context(
            AllInOneProcess(running.enter_context(reachable_workdir("gw-1-")))
        )
        second = running.enter_context(
            AllInOneProcess(running.enter_context(reachable_workdir("gw-2-")))
        )
        assert first.port_offset != second.port_offset  # each chose free ports, the other's held
        square = gw.function(vram="1GB", timeout="3m")(functions.square)
        jobs = {}
        for platform in (first, second):
            gw.configure(url=platform.url("platform"), api_key=_api_key(platform))
            handle = square.spawn(platform.port_offset)
            assert handle.result(timeout=180) == platform.port_offset**2
            jobs[platform.port_offset] = handle.job_id
        for platform in (first, second):
            with PlatformClient(platform.url("platform"), _api_key(platform)) as client:
                listed = {job.job_id for job in client.list_jobs().jobs}
            assert listed == {jobs[platform.port_offset]}
        _assert_only_its_own_ray_and_serve(first, second)
        _assert_only_its_own_ray_and_serve(second, first)
