"""A real S3 API for tests: moto's server mode on a loopback port, over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from moto.server import ThreadedMotoServer

from gridweave_runtime.storage import S3ObjectStore, StorageConfig
from tests.support.http_server import free_port

__all__ = ["s3_storage_config"]


@contextmanager
def s3_storage_config(bucket: str) -> Iterator[StorageConfig]:
    """An S3 server on loopback with ``bucket`` made, for the block: the storage config
    that reaches it (a root no local store could use)."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    config = StorageConfig(
        root="/nonexistent",
        s3_endpoint=f"http://{host}:{port}",
        s3_access_key="gridweave-test",
        s3_secret_key="gridweave-test-secret",
        s3_bucket=bucket,
    )
    try:
        S3ObjectStore(config).ensure_bucket()
        yield config
    finally:
        server.stop()
