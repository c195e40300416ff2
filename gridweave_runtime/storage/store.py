"""The object stores: a local directory (``file://``) or an S3 bucket (``s3://``, boto3).

:class:`StorageConfig` is plain data (it travels to Ray workers, which open the same store
with :func:`open_object_store`). Reads take any URI of a known scheme, so a function the
platform stored elsewhere in S3, or in a shared directory, is found by its reference.
A missing object raises :class:`ObjectNotFound`, any other failure :class:`ObjectStoreError`
(its base), so a reader can tell "nothing written yet" from "storage unreachable".
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlparse

__all__ = [
    "LocalObjectStore",
    "ObjectNotFound",
    "ObjectStore",
    "ObjectStoreError",
    "S3ObjectStore",
    "StorageConfig",
    "open_object_store",
]


class ObjectStoreError(RuntimeError):
    """An object could not be read or written (missing, unreachable, refused)."""


class ObjectNotFound(ObjectStoreError):
    """No object at that URI (nothing was written there, or it was deleted)."""


class ObjectStore(Protocol):
    """Keys relative to the store's root; URIs for everything read or handed out."""

    def uri(self, key: str) -> str:
        """The URI of ``key`` in this store."""
        ...

    def put(self, key: str, data: bytes) -> str:
        """Write ``data`` under ``key``; return its URI."""
        ...

    def get(self, uri: str) -> bytes:
        """Read the object at ``uri`` (this store's scheme); ObjectNotFound when missing."""
        ...

    def get_range(self, uri: str, start: int, end: int | None = None) -> bytes:
        """Bytes ``[start, end)`` of the object at ``uri`` (to its end without ``end``; short
        or empty past it); ObjectNotFound when missing."""
        ...

    def size(self, uri: str) -> int:
        """The size in bytes of the object at ``uri``; ObjectNotFound when missing."""
        ...

    def list_names(self, uri: str, *, after: str = "") -> list[str]:
        """The names of the objects under the folder ``uri`` (``<uri>/<name>``), sorted,
        only those greater than ``after``; empty when there are none."""
        ...

    def delete(self, key: str) -> None:
        """Remove ``key`` if it exists (a missing key is not an error)."""
        ...


@dataclass(frozen=True, slots=True)
class StorageConfig:
    """Which store: S3 when ``s3_endpoint`` is set, else the directory ``root``."""

    root: str
    s3_endpoint: str | None = None
    s3_access_key: str | None = None
    s3_secret_key: str | None = None
    s3_bucket: str = "gridweave"
    s3_region: str = "us-east-1"


#: The prefix of a local object being written (renamed into place when complete).
_TEMP = ".tmp-"


def _file_path(uri: str) -> Path:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        raise ObjectStoreError(f"not a file:// URI: {uri}")
    return Path(unquote(parsed.path))


class LocalObjectStore:
    """Objects as files under ``root``; URIs ``file:///abs/path``."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()

    def uri(self, key: str) -> str:
        """``file://`` URI of ``key``."""
        return self._path(key).as_uri()

    def put(self, key: str, data: bytes) -> str:
        """Write atomically (a temporary file renamed into place)."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=_TEMP, delete=False) as handle:
            handle.write(data)
        os.replace(handle.name, path)
        return path.as_uri()

    def get(self, uri: str) -> bytes:
        """Read a ``file://`` URI."""
        try:
            return _file_path(uri).read_bytes()
        except FileNotFoundError as exc:
            raise ObjectNotFound(f"no object at {uri}") from exc
        except OSError as exc:
            raise ObjectStoreError(f"cannot read {uri}: {exc}") from exc

    def get_range(self, uri: str, start: int, end: int | None = None) -> bytes:
        """A positional read of a ``file://`` URI."""
        path = _file_path(uri)
        if end is not None and end <= start:
            self.size(uri)  # a missing object is still ObjectNotFound
            return b""
        try:
            with path.open("rb") as handle:
                handle.seek(start)
                return handle.read() if end is None else handle.read(end - start)
        except FileNotFoundError as exc:
            raise ObjectNotFound(f"no object at {uri}") from exc
        except OSError as exc:
            raise ObjectStoreError(f"cannot read {uri}: {exc}") from exc

    def size(self, uri: str) -> int:
        """The file's size (``stat``)."""
        path = _file_path(uri)
        try:
            if not path.is_file():
                raise ObjectNotFound(f"no object at {uri}")
            return path.stat().st_size
        except FileNotFoundError as exc:
            raise ObjectNotFound(f"no object at {uri}") from exc
        except OSError as exc:
            raise ObjectStoreError(f"cannot read {uri}: {exc}") from exc

    def list_names(self, uri: str, *, after: str = "") -> list[str]:
        """The files in the folder of a ``file://`` URI (half-written temporary files left
        out: they are hidden until renamed into place)."""
        folder = _file_path(uri)
        try:
            names = [entry.name for entry in os.scandir(folder) if entry.is_file()]
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ObjectStoreError(f"cannot list {uri}: {exc}") from exc
        return sorted(name for name in names if name > after and not name.startswith(_TEMP))

    def delete(self, key: str) -> None:
        """Remove the file of ``key`` if it is there, and the folders it leaves empty."""
        path = self._path(key)
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise ObjectStoreError(f"cannot delete {key}: {exc}") from exc
        for folder in path.parents:
            if folder == self.root or not folder.is_relative_to(self.root):
                break
            try:
                folder.rmdir()
            except OSError:  # not empty (or already gone): the folders above are needed too
                break

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if not path.is_relative_to(self.root):
            raise ObjectStoreError(f"key {key!r} leaves the store's root")
        return path


class S3ObjectStore:
    """Objects in ``bucket`` of an S3 API (MinIO, AWS, moto); URIs ``s3://bucket/key``."""

    def __init__(self, config: StorageConfig) -> None:
        import boto3  # the server extra; imported only when S3 is configured

        self.bucket = config.s3_bucket
        self._client: Any = boto3.client(
            "s3",
            endpoint_url=config.s3_endpoint,
            aws_access_key_id=config.s3_access_key,
            aws_secret_access_key=config.s3_secret_key,
            region_name=config.s3_region,
        )

    def uri(self, key: str) -> str:
        """``s3://`` URI of ``key`` in the bucket."""
        return f"s3://{self.bucket}/{key}"

    def put(self, key: str, data: bytes) -> str:
        """One PUT Object."""
        try:
            self._client.put_object(Bucket=self.bucket, Key=key, Body=data)
        except Exception as exc:  # botocore's errors: any failure is the store's
            raise ObjectStoreError(f"cannot write s3://{self.bucket}/{key}: {exc}") from exc
        return self.uri(key)

    def get(self, uri: str) -> bytes:
        """One GET Object of an ``s3://bucket/key`` URI (any bucket)."""
        bucket, key = _s3_location(uri)
        try:
            answer = self._client.get_object(Bucket=bucket, Key=key)
            return bytes(answer["Body"].read())
        except Exception as exc:
            if _error_code(exc) in _MISSING:
                raise ObjectNotFound(f"no object at {uri}") from exc
            raise ObjectStoreError(f"cannot read {uri}: {exc}") from exc

    def get_range(self, uri: str, start: int, end: int | None = None) -> bytes:
        """One ranged GET Object (``Range: bytes=start-end``)."""
        bucket, key = _s3_location(uri)
        if end is not None and end <= start:
            self.size(uri)
            return b""
        wanted = f"bytes={start}-" + ("" if end is None else str(end - 1))
        try:
            answer = self._client.get_object(Bucket=bucket, Key=key, Range=wanted)
            return bytes(answer["Body"].read())
        except Exception as exc:
            code = _error_code(exc)
            if code == "InvalidRange":  # starts at or past the end
                self.size(uri)
                return b""
            if code in _MISSING:
                raise ObjectNotFound(f"no object at {uri}") from exc
            raise ObjectStoreError(f"cannot read {uri}: {exc}") from exc

    def size(self, uri: str) -> int:
        """One HEAD Object."""
        bucket, key = _s3_location(uri)
        try:
            return int(self._client.head_object(Bucket=bucket, Key=key)["ContentLength"])
        except Exception as exc:
            if _error_code(exc) in _MISSING:
                raise ObjectNotFound(f"no object at {uri}") from exc
            raise ObjectStoreError(f"cannot read {uri}: {exc}") from exc

    def list_names(self, uri: str, *, after: str = "") -> list[str]:
        """ListObjectsV2 of the prefix ``<key>/``, from after ``after`` (``StartAfter``)."""
        bucket, key = _s3_location(uri)
        prefix = key.rstrip("/") + "/"
        names: list[str] = []
        options: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
        if after:
            options["StartAfter"] = prefix + after
        try:
            for page in self._client.get_paginator("list_objects_v2").paginate(**options):
                for item in page.get("Contents", []):
                    name = str(item["Key"])[len(prefix) :]
                    if "/" not in name and name > after:
                        names.append(name)
        except Exception as exc:
            raise ObjectStoreError(f"cannot list {uri}: {exc}") from exc
        return sorted(names)

    def delete(self, key: str) -> None:
        """One DELETE Object (S3 answers a missing key with success too)."""
        try:
            self._client.delete_object(Bucket=self.bucket, Key=key)
        except Exception as exc:
            raise ObjectStoreError(f"cannot delete s3://{self.bucket}/{key}: {exc}") from exc

    def ensure_bucket(self) -> None:
        """Create the bucket if it does not exist."""
        try:
            self._client.head_bucket(Bucket=self.bucket)
        except Exception:
            self._client.create_bucket(Bucket=self.bucket)


#: botocore's codes of a missing object (GET answers NoSuchKey, HEAD a bare 404).
_MISSING = frozenset({"NoSuchKey", "404", "NotFound"})


def _s3_location(uri: str) -> tuple[str, str]:
    """The bucket and key of an ``s3://bucket/key`` URI."""
    parsed = urlparse(uri)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise ObjectStoreError(f"not an s3:// URI: {uri}")
    return parsed.netloc, parsed.path.lstrip("/")


def _error_code(exc: Exception) -> str | None:
    """botocore's ClientError code (``NoSuchKey``...), without importing botocore."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return None
    code = response.get("Error", {}).get("Code")
    return str(code) if code is not None else None


def open_object_store(config: StorageConfig) -> ObjectStore:
    """S3 when an endpoint is configured, else the local directory."""
    if config.s3_endpoint:
        return S3ObjectStore(config)
    return LocalObjectStore(config.root)
