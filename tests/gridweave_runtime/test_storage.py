"""The object stores' contract, run on each backend (a directory, and S3 on moto's server):
ranged reads, sizes and listings; and a log read from its parts as from its whole object."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from gridweave_runtime.storage import (
    LocalObjectStore,
    ObjectNotFound,
    ObjectStore,
    S3ObjectStore,
    StorageConfig,
    log_part_key,
    read_log,
)
from tests.support.s3_server import s3_storage_config


@pytest.fixture(scope="module")
def s3_config() -> Iterator[StorageConfig]:
    with s3_storage_config("gridweave-store") as config:
        yield config


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path, s3_config: StorageConfig) -> ObjectStore:
    if request.param == "local":
        return LocalObjectStore(tmp_path)
    s3 = S3ObjectStore(replace(s3_config, s3_bucket=f"test-{uuid.uuid4().hex[:12]}"))
    s3.ensure_bucket()  # a bucket per test
    return s3


class TestRanges:
    def test_a_range_is_those_bytes_clipped_to_the_object(self, store: ObjectStore) -> None:
        uri = store.put("logs/out.txt", b"0123456789")
        assert store.get_range(uri, 2, 5) == b"234"
        assert store.get_range(uri, 7) == b"789"
        assert store.get_range(uri, 8, 100) == b"89"
        assert store.get_range(uri, 10) == b"" and store.get_range(uri, 50, 60) == b""
        assert store.get_range(uri, 4, 4) == b""
        assert store.size(uri) == 10

    def test_a_missing_object_is_not_found(self, store: ObjectStore) -> None:
        uri = store.uri("logs/none.txt")
        with pytest.raises(ObjectNotFound):
            store.get_range(uri, 0, 10)
        with pytest.raises(ObjectNotFound):
            store.get_range(uri, 3, 3)
        with pytest.raises(ObjectNotFound):
            store.size(uri)


class TestListing:
    def test_names_under_a_folder_sorted_after_a_name(self, store: ObjectStore) -> None:
        for name in ("b", "a", "c", "d/deeper"):
            store.put(f"folder/{name}", b"x")
        store.put("folder-sibling", b"x")
        folder = store.uri("folder")
        assert store.list_names(folder) == ["a", "b", "c"]
        assert store.list_names(folder, after="a") == ["b", "c"]
        assert store.list_names(store.uri("nothing")) == []


class TestLogs:
    OUTPUT = b"first line\nsecond line\na third, longer line\nlast\n"
    # uploads as a worker makes them: what is new each time; one sent again with more
    PARTS = ((0, 11), (11, 23), (23, 30), (23, 44), (44, 49))

    def _parts(self, store: ObjectStore) -> str:
        for start, end in self.PARTS:
            store.put(log_part_key("job/stdout.txt", start, end), self.OUTPUT[start:end])
        return store.uri("job/stdout.txt")

    @pytest.mark.parametrize(
        ("start", "end", "last"),
        [
            (0, None, None),
            (5, None, None),
            (11, 23, None),
            (20, 40, None),
            (0, None, 10),
            (30, None, None),
            (49, None, None),
            (60, None, None),
            (12, 13, None),
        ],
    )
    def test_parts_read_as_the_whole_object(
        self, store: ObjectStore, start: int, end: int | None, last: int | None
    ) -> None:
        from_parts = read_log(store, self._parts(store), start, end, last=last)
        whole = store.put("job/stdout.txt", self.OUTPUT)
        from_whole = read_log(store, whole, start, end, last=last)
        assert from_parts.data == from_whole.data
        if start <= len(self.OUTPUT):
            assert from_parts.start == from_whole.start
            assert from_parts.size == from_whole.size == len(self.OUTPUT)
        else:  # past every part: nothing new, the position kept
            assert from_parts.start == from_parts.size == start

    def test_nothing_written_is_empty(self, store: ObjectStore) -> None:
        read = read_log(store, store.uri("job/stdout.txt"))
        assert (read.data, read.start, read.size) == (b"", 0, 0)

    def test_parts_replaced_by_the_whole_object_read_it(self, store: ObjectStore) -> None:
        uri = self._parts(store)
        store.put("job/stdout.txt", self.OUTPUT)
        for start, end in self.PARTS:
            store.delete(log_part_key("job/stdout.txt", start, end))
        assert read_log(store, uri, 0).data == self.OUTPUT
