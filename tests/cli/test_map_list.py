"""``gridweave maps`` and ``map-status`` against the whole platform stack (the gateway
placing, not executing): each map's progress as done of all and failed, read from what its
workers stored; the tables fit 80 columns without cutting an id."""

from __future__ import annotations

import pytest

from gridweave_clients.maps import WorkerProgress
from gridweave_runtime.storage import LocalObjectStore
from gridweave_runtime.storage.maps import map_objects
from tests.cli.helpers import Invoke, as_user, json_of
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.factories import PlatformServer, User, map_body
from tests.support.credit_server import CreditServer
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]


@pytest.fixture
def alice(platform: PlatformServer, credit: CreditServer, monkeypatch: pytest.MonkeyPatch) -> User:
    """A funded user, the CLI's user."""
    user = platform.new_user()
    credit.fund(user.user_id, 10**9)
    as_user(monkeypatch, platform, user)
    return user


def _submitted(platform: PlatformServer, user: User, count: int) -> list[str]:
    """``count`` maps of ten inputs on three workers each, oldest first."""
    ids = []
    for _ in range(count):
        response = platform.http.post("/v1/maps", json=map_body(), headers=user.headers)
        assert response.status_code == 201, response.text
        ids.append(response.json()["map_id"])
    return ids


def _stored(platform: PlatformServer, map_id: str, worker: int, done: int, failed: int) -> None:
    """Worker ``worker``'s progress, where a worker stores it."""
    progress = WorkerProgress(worker=worker, done=done, failed=failed)
    store = LocalObjectStore(platform.storage_dir)
    store.put(map_objects(map_id).progress(worker), progress.model_dump_json().encode())


class TestMaps:
    def test_the_table_json_and_limit_show_done_of_all_and_failed(
        self, platform: PlatformServer, alice: User, gridweave: Invoke
    ) -> None:
        assert gridweave("maps").stdout == "No maps.\n"
        older, newer = _submitted(platform, alice, 2)
        _stored(platform, older, 0, done=3, failed=1)
        _stored(platform, older, 2, done=2, failed=0)
        wait_until(lambda: len(json_of(gridweave("maps", "--json"))["maps"]) == 2)
        listed = json_of(gridweave("maps", "--json"))
        assert listed["total"] == 2
        by_id = {found["map_id"]: found for found in listed["maps"]}
        assert (by_id[older]["done"], by_id[older]["failed"]) == (5, 1)
        shown = gridweave("maps")
        assert shown.exit_code == 0, shown.output
        header, *rows = shown.stdout.splitlines()
        columns = ["map", "function", "phase", "done/total", "failed", "workers", "age"]
        assert header.split() == columns
        cells = {row.split()[0]: row.split()[1:] for row in rows}
        assert cells[older][:4] == ["-", "Pending", "5/10", "1"]
        assert cells[newer][:5] == ["-", "Pending", "0/10", "0", "3"]
        one = gridweave("maps", "--limit", "1")
        assert len(one.stdout.splitlines()) == 2
        assert "the newest 1 of 2 maps" in one.stderr

    def test_map_status_shows_each_worker_with_its_node_and_gpus(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User, gridweave: Invoke
    ) -> None:
        (map_id,) = _submitted(platform, alice, 1)
        gateway.crd.set_job_allocated(f"{map_id}-w1", "gpu-b", [1])
        _stored(platform, map_id, 1, done=4, failed=0)
        shown = gridweave("map-status", map_id)
        assert shown.exit_code == 0, shown.output
        lines = shown.stdout.splitlines()
        assert lines[0].startswith(f"{map_id} Pending: 4 done, 0 failed of 10")
        rows = {line.split()[0]: line for line in lines[2:]}
        assert set(rows) == {f"{map_id}-w{k}" for k in range(3)}
        assert "gpu-b [1]" in rows[f"{map_id}-w1"] and "Allocated" in rows[f"{map_id}-w1"]


class TestAtEightyColumns:
    def test_maps_and_map_status_fit_without_cutting_an_id(
        self,
        platform: PlatformServer,
        gateway: GatewayServer,
        alice: User,
        gridweave: Invoke,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        body = map_body(function_name="a_function_with_a_rather_long_name_indeed")
        response = platform.http.post("/v1/maps", json=body, headers=alice.headers)
        map_id = response.json()["map_id"]
        gateway.crd.set_job_allocated(f"{map_id}-w0", "gpu-node-with-a-long-name", [0])
        wait_until(lambda: map_id in gridweave("maps").stdout)
        monkeypatch.setenv("COLUMNS", "80")
        for command in (("maps",), ("map-status", map_id)):
            shown = gridweave(*command)
            assert shown.exit_code == 0, shown.output
            lines = shown.stdout.splitlines()
            assert all(len(line) <= 80 for line in lines), (command, lines)
            assert any(line.split()[0] in (map_id, f"{map_id}-w0") for line in lines), lines
        table = gridweave("maps").stdout.splitlines()
        assert table[1].split()[0] == map_id and "0/10" in table[1]
