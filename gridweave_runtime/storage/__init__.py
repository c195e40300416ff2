"""Object storage for job inputs and outcomes: a local directory, or S3 (boto3).

Shared by platform_service (which stores the SDK's pickled function and arguments) and the
job gateway and its workers (which read them and write the result, the traceback and the
output). The control plane only moves these bytes; it never unpickles them.
"""

from __future__ import annotations

from gridweave_runtime.storage.layout import (
    AttemptObjects,
    InputObjects,
    attempt_objects,
    input_objects,
)
from gridweave_runtime.storage.settings import ObjectStorageSettings
from gridweave_runtime.storage.store import (
    LocalObjectStore,
    ObjectNotFound,
    ObjectStore,
    ObjectStoreError,
    S3ObjectStore,
    StorageConfig,
    open_object_store,
)

__all__ = [
    "AttemptObjects",
    "InputObjects",
    "LocalObjectStore",
    "ObjectNotFound",
    "ObjectStorageSettings",
    "ObjectStore",
    "ObjectStoreError",
    "S3ObjectStore",
    "StorageConfig",
    "attempt_objects",
    "input_objects",
    "open_object_store",
]
