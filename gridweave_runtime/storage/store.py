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
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as handle:
            handle.write(data)
        os.replace(handle.name, path)
        return path.as_uri()

    def get(self, uri: str) -> bytes:
        """Read a ``file://`` URI."""
        parsed = urlparse(uri)
        if parsed.scheme != "file":
            raise ObjectStoreError(f"not a file:// URI: {uri}")
        try:
            return Path(unquote(parsed.path)).read_bytes()
        except FileNotFoundError as exc:
            raise ObjectNotFound(f"no object at {uri}") from exc
        except OSError as exc:
            raise ObjectStoreError(f"cannot read {uri}: {exc}") from exc

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
        parsed = urlparse(uri)
        if parsed.scheme != "s3" or not parsed.netloc:
            raise ObjectStoreError(f"not an s3:// URI: {uri}")
        try:
            answer = self._client.get_object(Bucket=parsed.netloc, Key=parsed.path.lstrip("/"))
            return bytes(answer["Body"].read())
        except Exception as exc:
            if _error_code(exc) in {"NoSuchKey", "404", "NotFound"}:
                raise ObjectNotFound(f"no object at {uri}") from exc
            raise ObjectStoreError(f"cannot read {uri}: {exc}") from exc

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
