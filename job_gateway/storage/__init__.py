"""Object storage for job inputs and outcomes: a local directory, or S3 (boto3).

The gateway only names objects (URIs); the worker side reads the pickled function and
arguments and writes the result, the traceback and the output (:mod:`job_gateway.executor`).
"""

from __future__ import annotations

from job_gateway.storage.layout import AttemptObjects, attempt_objects
from job_gateway.storage.store import (
    LocalObjectStore,
    ObjectStore,
    ObjectStoreError,
    StorageConfig,
    open_object_store,
)

__all__ = [
    "AttemptObjects",
    "LocalObjectStore",
    "ObjectStore",
    "ObjectStoreError",
    "StorageConfig",
    "attempt_objects",
    "open_object_store",
]
