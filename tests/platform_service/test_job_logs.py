"""A job's log read by range, over real HTTP on the real gateway and apiserver: the paged
route, the live stream and the download read only the bytes they answer; a running job's
output in parts reads as the same bytes as the whole object; a user's live streams are
capped."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from gridweave_runtime.storage import LocalObjectStore, attempt_objects, log_part_key
from tests.job_gateway.gateway_factories import GatewayServer
from tests.platform_service.factories import (
    PlatformServer,
    User,
    platform_settings,
    running_platform,
    submit_body,
)
from tests.platform_service.test_job_pages import _events
from tests.support.credit_server import CreditServer

pytestmark = [pytest.mark.kubeapi, pytest.mark.postgres]

STREAMS = 2
BIG = 4 * 1024 * 1024


class CountingStore(LocalObjectStore):
    """The local store, counting the bytes each read returned."""

    read_bytes = 0

    def get(self, uri: str) -> bytes:
        data = super().get(uri)
        self.read_bytes += len(data)
        return data

    def get_range(self, uri: str, start: int, end: int | None = None) -> bytes:
        data = super().get_range(uri, start, end)
        self.read_bytes += len(data)
        return data


@pytest.fixture(scope="module")
def store(gateway: GatewayServer) -> CountingStore:
    return CountingStore(gateway.storage_dir)


@pytest.fixture(scope="module")
def platform(
    platform_database: str,
    credit: CreditServer,
    metering: httpx.Client,
    gateway: GatewayServer,
    store: CountingStore,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[PlatformServer]:
    """The platform on the gateway's store (counted), at most two live streams a user."""
    settings = platform_settings(
        platform_database,
        tmp_path_factory.mktemp("platform"),
        credit_service_url=credit.url,
        metering_service_url=str(metering.base_url),
        gateway_url=gateway.url,
        storage_dir=gateway.storage_dir,
        max_log_streams_per_user=STREAMS,
        log_poll_seconds=0.05,
    )
    with running_platform(settings, store=store) as server:
        yield server


@pytest.fixture
def alice(platform: PlatformServer, credit: CreditServer) -> User:
    user = platform.new_user()
    credit.fund(user.user_id, 10**9)
    return user


def _running_job(platform: PlatformServer, gateway: GatewayServer, user: User) -> str:
    response = platform.http.post("/v1/jobs", json=submit_body(), headers=user.headers)
    assert response.status_code == 201, response.text
    job_id: str = response.json()["job_id"]
    gateway.crd.set_job_allocated(job_id, "gpu-b", [0])
    gateway.crd.set_job_running(job_id)
    return job_id


def _big_log() -> bytes:
    return b"".join(b"line %08d of a long log\n" % n for n in range(BIG // 28))


class TestRangedReads:
    def test_each_route_reads_only_what_it_answers(
        self,
        platform: PlatformServer,
        gateway: GatewayServer,
        store: CountingStore,
        alice: User,
    ) -> None:
        job_id = _running_job(platform, gateway, alice)
        log = _big_log()
        store.put(attempt_objects(job_id, 0).stdout, log)
        line = len(log.splitlines(keepends=True)[-1])
        near_end = len(log) - line

        store.read_bytes = 0
        page = platform.http.get(
            f"/v1/jobs/{job_id}/logs",
            params={"stdout_offset": near_end},
            headers=alice.headers,
        ).json()
        assert page["stdout"].encode() == log[near_end:]
        assert page["stdout_offset"] == len(log) and not page["stdout_truncated"]
        assert store.read_bytes == line

        store.read_bytes = 0
        download = platform.http.get(
            f"/v1/jobs/{job_id}/logs/download",
            params={"stream": "stdout", "offset": 1000, "length": 50},
            headers=alice.headers,
        )
        assert download.content == log[1000:1050]
        assert download.headers["x-log-size"] == str(len(log))
        assert store.read_bytes == 50

        store.read_bytes = 0
        url = f"/v1/jobs/{job_id}/logs/stream"
        headers = {**alice.headers, "Last-Event-ID": f"{near_end}.0"}
        with platform.http.stream("GET", url, headers=headers, timeout=30) as response:
            events = _events(response, until="stdout")
        assert events == [(f"{len(log)}.0", "stdout", log[near_end:-1].decode())]
        assert store.read_bytes < 1024  # the tail, polled: never the 4 MiB before it

    def test_the_tail_of_a_long_log_is_read_alone(
        self,
        platform: PlatformServer,
        gateway: GatewayServer,
        store: CountingStore,
        alice: User,
    ) -> None:
        job_id = _running_job(platform, gateway, alice)
        log = _big_log()
        store.put(attempt_objects(job_id, 0).stdout, log)
        store.read_bytes = 0
        page = platform.http.get(f"/v1/jobs/{job_id}/logs", headers=alice.headers).json()
        assert page["stdout_truncated"] and page["stdout_offset"] == len(log)
        assert page["stdout"].encode() == log[-len(page["stdout"].encode()) :]
        assert store.read_bytes == len(page["stdout"].encode())


class TestParts:
    def test_a_running_jobs_parts_read_as_the_whole_output(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User
    ) -> None:
        job_id = _running_job(platform, gateway, alice)
        store = LocalObjectStore(gateway.storage_dir)
        key = attempt_objects(job_id, 0).stdout
        output = b"step 1\nstep 2\npartial line\nlast\n"
        # uploads as the worker makes them: only what is new, the third one sent twice
        for start, end in ((0, 7), (7, 14), (14, 20), (14, 27), (27, len(output))):
            store.put(log_part_key(key, start, end), output[start:end])

        page = platform.http.get(f"/v1/jobs/{job_id}/logs", headers=alice.headers).json()
        assert page["stdout"].encode() == output and page["stdout_offset"] == len(output)
        download = platform.http.get(
            f"/v1/jobs/{job_id}/logs/download", params={"stream": "stdout"}, headers=alice.headers
        )
        assert download.content == output and download.headers["x-log-size"] == "32"
        middle = platform.http.get(
            f"/v1/jobs/{job_id}/logs/download",
            params={"stream": "stdout", "offset": 10, "length": 12},
            headers=alice.headers,
        )
        assert middle.content == output[10:22]

        gateway.crd.set_job_completed(job_id, 1.0)  # a worker lost: only the parts remain
        url = f"/v1/jobs/{job_id}/logs/stream"
        headers = {**alice.headers, "Last-Event-ID": "7.0"}
        with platform.http.stream("GET", url, headers=headers, timeout=30) as response:
            events = _events(response, until="end")
        assert [(event, data) for _, event, data in events] == [
            ("stdout", "step 2"),
            ("stdout", "partial line"),
            ("stdout", "last"),
            ("end", "Completed"),
        ]


class TestStreamCap:
    def test_a_user_holds_at_most_the_limit_of_live_streams(
        self, platform: PlatformServer, gateway: GatewayServer, alice: User
    ) -> None:
        job_id = _running_job(platform, gateway, alice)
        url = f"{platform.url}/v1/jobs/{job_id}/logs/stream"
        bob = platform.new_user()
        with ExitStack() as held:
            opened = [
                held.enter_context(httpx.stream("GET", url, headers=alice.headers, timeout=10))
                for _ in range(STREAMS)
            ]
            assert all(response.status_code == 200 for response in opened)
            refused = httpx.get(url, headers=alice.headers, timeout=10)
            assert refused.status_code == 429, refused.text
            error = refused.json()["error"]
            assert error["code"] == "too_many_log_streams"
            assert "PLATFORM_MAX_LOG_STREAMS_PER_USER=2" in error["message"]
            # another user's streams are counted apart (bob's is a 404: not his job)
            assert httpx.get(url, headers=bob.headers, timeout=10).status_code == 404
            opened[0].close()  # the server sees the connection closed and gives the slot back
            for _ in range(100):
                with httpx.stream("GET", url, headers=alice.headers, timeout=10) as again:
                    if again.status_code == 200:
                        break
                time.sleep(0.05)
            else:
                pytest.fail("a closed stream's slot was never given back")


def test_counting_store_is_the_local_store(tmp_path: Path) -> None:
    store = CountingStore(tmp_path)
    uri = store.put("a", b"0123456789")
    assert store.get_range(uri, 2, 5) == b"234" and store.read_bytes == 3
