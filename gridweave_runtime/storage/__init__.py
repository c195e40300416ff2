"""Object storage for job inputs and outcomes: a local directory, or S3 (boto3).

Shared by platform_service (which stores the SDK's pickled function and arguments) and the
job gateway and its workers (which read them and write the result, the traceback and the
output). The control plane only moves these bytes; it never unpickles them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gridweave_runtime.storage.layout import (
    AttemptObjects,
    InputObjects,
    attempt_objects,
    input_objects,
)
from gridweave_runtime.storage.logs import LogSlice, log_part_key, log_parts_uri, read_log
from gridweave_runtime.storage.store import (
    LocalObjectStore,
    ObjectNotFound,
    ObjectStore,
    ObjectStoreError,
    S3ObjectStore,
    StorageConfig,
    open_object_store,
)

if TYPE_CHECKING:
    from gridweave_runtime.storage.settings import ObjectStorageSettings

__all__ = [
    "AttemptObjects",
    "InputObjects",
    "LocalObjectStore",
    "LogSlice",
    "ObjectNotFound",
    "ObjectStorageSettings",
    "ObjectStore",
    "ObjectStoreError",
    "S3ObjectStore",
    "StorageConfig",
    "attempt_objects",
    "input_objects",
    "log_part_key",
    "log_parts_uri",
    "open_object_store",
    "read_log",
]


def __getattr__(name: str) -> Any:
    # the settings (pydantic-settings) are the services'; a Ray worker reading the store
    # does not import them
    if name == "ObjectStorageSettings":
        from gridweave_runtime.storage.settings import ObjectStorageSettings

        return ObjectStorageSettings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
