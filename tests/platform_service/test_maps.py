"""``/v1/maps`` on the real gateway (placing, not executing), credit_service and PostgreSQL:
a map is its workers' jobs, each with its share and its own hold; refusals leave nothing
behind; another user's map is not found; a chunk is served only once its worker stored it;
pages of a user's maps with their progress."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest

from gridweave_clients.maps import WorkerProgress
from gridweave_runtime.storage import LocalObjectStore
from gridweave_runtime.storage.maps import map_objects
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.factories import PlatformServer, User, map_body, submit_body
from tests.support.credit_server import CreditServer
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

#: AMD up to 16 GiB: 90 micro-credits per GPU-second, for 60 s (each worker's hold).
WORKER_HOLD = 90 * 60


@pytest.fixture
def alice(platform: PlatformServer, credit: CreditServer) -> User:
    user = platform.new_user()
    credit.fund(user.user_id, 10**9)
    return user


def _submit(platform: PlatformServer, user: User, **overrides: Any) -> httpx.Response:
    return platform.http.post("/v1/maps", json=map_body(**overrides), headers=user.headers)


class TestSubmit:
    def test_a_map_is_its_workers_each_with_its_share_and_its_own_hold(
        self, platform: PlatformServer, gateway: GatewayServer, credit: CreditServer, alice: User
    ) -> None:
        response = _submit(platform, alice)
        assert response.status_code == 201, response.text
        body = response.json()
        assert (body["items"], body["chunks"], body["done"], body["failed"]) == (10, 5, 0, 0)
        assert body["phase"] == "Pending" and not body["finished"]
        assert body["hold_amount"] == 3 * WORKER_HOLD
        assert credit.account(alice.user_id)["held"] == 3 * WORKER_HOLD
        workers = [worker["job_id"] for worker in body["workers"]]
        assert workers == [f"{body['map_id']}-w{k}" for k in range(3)]
        for k, job_id in enumerate(workers):
            share = gateway.crd.get_job(job_id).spec.map
            assert share is not None
            assert (share.map_id, share.worker, share.workers) == (body["map_id"], k, 3)
            assert (share.items, share.chunk_items) == (10, 2)
        read = platform.http.get(f"/v1/maps/{body['map_id']}", headers=alice.headers)
        assert read.json()["workers"] == body["workers"]

    def test_fewer_chunks_than_workers_means_fewer_workers(
        self, platform: PlatformServer, alice: User
    ) -> None:
        chunk = base64.b64encode(b"c").decode()
        body = _submit(platform, alice, chunks=[chunk], items=2, chunk_items=2).json()
        assert len(body["workers"]) == 1

    def test_a_retry_with_the_same_key_answers_the_same_map(
        self, platform: PlatformServer, credit: CreditServer, alice: User
    ) -> None:
        headers = {**alice.headers, "Idempotency-Key": "map-retry-1"}
        first = platform.http.post("/v1/maps", json=map_body(), headers=headers)
        again = platform.http.post("/v1/maps", json=map_body(), headers=headers)
        assert (first.status_code, again.status_code) == (201, 200)
        assert first.json()["map_id"] == again.json()["map_id"]
        assert credit.account(alice.user_id)["held"] == 3 * WORKER_HOLD


class TestRefusals:
    def test_short_of_credits_is_402_and_leaves_no_hold_and_no_worker(
        self, platform: PlatformServer, credit: CreditServer
    ) -> None:
        user = platform.new_user()
        credit.fund(user.user_id, 2 * WORKER_HOLD)  # two workers' holds, not three
        response = _submit(platform, user)
        assert response.status_code == 402, response.text
        assert response.json()["error"]["code"] == "insufficient_credits"
        assert credit.account(user.user_id)["held"] == 0
        assert platform.http.get("/v1/jobs", headers=user.headers).json()["jobs"] == []

    @pytest.mark.parametrize(
        ("overrides", "field"),
        [
            ({"items": 11}, "chunks"),  # 11 inputs of 2 make 6 chunks, not 5
            ({"chunk_items": 0}, "chunk_items"),
            ({"concurrency": 0}, "concurrency"),
            ({"concurrency": 257}, "concurrency"),
            ({"retries": 11}, "retries"),
            ({"chunks": []}, "chunks"),
            ({"function": ""}, "function"),
        ],
    )
    def test_bad_fields_are_named(
        self, platform: PlatformServer, alice: User, overrides: dict[str, Any], field: str
    ) -> None:
        response = _submit(platform, alice, **overrides)
        assert response.status_code == 422, response.text
        assert field in str(response.json()["error"]["fields"])

    def test_another_users_map_is_not_found(
        self, platform: PlatformServer, credit: CreditServer, alice: User
    ) -> None:
        map_id = _submit(platform, alice).json()["map_id"]
        bob = platform.new_user()
        for method, path in (
            ("GET", f"/v1/maps/{map_id}"),
            ("POST", f"/v1/maps/{map_id}/cancel"),
            ("GET", f"/v1/maps/{map_id}/chunks/0"),
        ):
            answer = platform.http.request(method, path, headers=bob.headers)
            assert answer.status_code == 404, answer.text
            assert answer.json()["error"]["code"] == "map_not_found"

    def test_a_chunk_not_stored_yet_is_409_and_past_the_last_is_422(
        self, platform: PlatformServer, alice: User
    ) -> None:
        map_id = _submit(platform, alice).json()["map_id"]
        waiting = platform.http.get(f"/v1/maps/{map_id}/chunks/4", headers=alice.headers)
        assert waiting.status_code == 409
        assert waiting.json()["error"]["code"] == "chunk_not_ready"
        past = platform.http.get(f"/v1/maps/{map_id}/chunks/5", headers=alice.headers)
        assert past.status_code == 422 and "chunk" in str(past.json()["error"]["fields"])
        records = platform.http.get(f"/v1/maps/{map_id}/records", headers=alice.headers)
        assert records.status_code == 200 and records.content == b""
        assert records.headers["X-Gridweave-Next-Chunk"] == "0"  # none stored yet
        beyond = platform.http.get(
            f"/v1/maps/{map_id}/records", params={"start": 5}, headers=alice.headers
        )
        assert beyond.status_code == 422 and "start" in str(beyond.json()["error"]["fields"])


class TestCancel:
    def test_cancel_stops_every_worker_and_gives_back_the_holds_of_those_never_placed(
        self, platform: PlatformServer, credit: CreditServer, alice: User
    ) -> None:
        map_id = _submit(platform, alice).json()["map_id"]
        cancelled = platform.http.post(f"/v1/maps/{map_id}/cancel", headers=alice.headers)
        assert cancelled.status_code == 200, cancelled.text
        body = cancelled.json()
        assert body["phase"] == "Cancelled" and body["finished"]
        assert {worker["phase"] for worker in body["workers"]} == {"Cancelled"}
        assert credit.account(alice.user_id)["held"] == 0  # the AMD node is NotReady: none ran
        again = platform.http.post(f"/v1/maps/{map_id}/cancel", headers=alice.headers)
        assert again.status_code == 200


def _maps_page(platform: PlatformServer, user: User, **params: Any) -> dict[str, Any]:
    response = platform.http.get("/v1/maps", params=params, headers=user.headers)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


class TestList:
    def test_pages_walk_every_map_newest_first_once_with_its_progress(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User
    ) -> None:
        submitted = [_submit(platform, alice).json()["map_id"] for _ in range(5)]
        # pages are cut from the gateway's informer, which sees new jobs shortly
        wait_until(lambda: _maps_page(platform, alice)["total"] == 5)
        store = LocalObjectStore(platform.storage_dir)
        progress = WorkerProgress(worker=1, done=3, failed=1)
        store.put(map_objects(submitted[0]).progress(1), progress.model_dump_json().encode())
        gateway.crd.set_job_allocated(f"{submitted[0]}-w1", "gpu-b", [0])
        seen: list[dict[str, Any]] = []
        cursor = None
        for _ in range(5):
            body = _maps_page(platform, alice, limit=2, **({"cursor": cursor} if cursor else {}))
            assert body["total"] == 5 and len(body["maps"]) <= 2
            seen += body["maps"]
            cursor = body["next_cursor"]
            if cursor is None:
                break
        assert cursor is None
        assert sorted(found["map_id"] for found in seen) == sorted(submitted)  # each once
        first = next(found for found in seen if found["map_id"] == submitted[0])
        assert (first["items"], first["done"], first["failed"]) == (10, 3, 1)
        assert [(w["done"], w["failed"]) for w in first["workers"]] == [(0, 0), (3, 1), (0, 0)]
        assert first["workers"][1]["node"] == "gpu-b"
        assert first["workers"][1]["gpu_indices"] == [0]

    def test_another_users_maps_are_not_listed(
        self, platform: PlatformServer, credit: CreditServer, alice: User
    ) -> None:
        mine = _submit(platform, alice).json()["map_id"]
        bob = platform.new_user()
        credit.fund(bob.user_id, 10**9)
        wait_until(lambda: _maps_page(platform, alice)["total"] == 1)
        assert _maps_page(platform, bob) == {"maps": [], "total": 0, "next_cursor": None}
        theirs = _submit(platform, bob).json()["map_id"]
        wait_until(lambda: _maps_page(platform, bob)["total"] == 1)
        assert [found["map_id"] for found in _maps_page(platform, bob)["maps"]] == [theirs]
        assert [found["map_id"] for found in _maps_page(platform, alice)["maps"]] == [mine]

    def test_plain_jobs_are_not_maps(self, platform: PlatformServer, alice: User) -> None:
        job = platform.http.post("/v1/jobs", json=submit_body(), headers=alice.headers)
        assert job.status_code == 201, job.text
        assert _maps_page(platform, alice)["maps"] == []

    @pytest.mark.parametrize(
        ("params", "field"),
        [
            ({"limit": 0}, "limit"),
            ({"limit": 101}, "limit"),
            ({"limit": "many"}, "limit"),
            ({"cursor": "not-a-cursor"}, "cursor"),
            ({"cursor": "x" * 401}, "cursor"),
        ],
    )
    def test_a_bad_limit_or_cursor_is_422_naming_it(
        self, platform: PlatformServer, alice: User, params: dict[str, Any], field: str
    ) -> None:
        response = platform.http.get("/v1/maps", params=params, headers=alice.headers)
        assert response.status_code == 422, response.text
        assert field in str(response.json()["error"]["fields"])
