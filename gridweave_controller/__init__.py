"""Gridweave controller library: the typed client for GridweaveJob and GridweaveEndpoint.

``from gridweave_controller import crd`` gives the module-level functions (the direct
transport, which imports the Kubernetes client); ``from gridweave_controller import aio``
gives :class:`~gridweave_controller.aio.AsyncCrdClient` for services on an event loop (the
official client's asyncio API). The models, phases, errors and the typed :class:`CrdClient`
are re-exported here without either.
"""

from __future__ import annotations

from gridweave_controller.billing import billed_seconds
from gridweave_controller.client import CrdClient
from gridweave_controller.errors import (
    AlreadyExists,
    Conflict,
    CrdError,
    CRDNotInstalled,
    Expired,
    Invalid,
    InvalidTransition,
    NotFound,
    TransportError,
    WaitTimedOut,
    error_from_status,
)
from gridweave_controller.models import (
    Condition,
    Endpoint,
    EndpointSpec,
    EndpointStatus,
    Job,
    JobSpec,
    JobStatus,
)
from gridweave_controller.phases import EndpointPhase, JobPhase
from gridweave_controller.store import RawStore
from gridweave_controller.validation import USER_LABEL, user_label_value
from gridweave_controller.vendors import GPU_VENDORS, GpuVendor, Vendor

__all__ = [
    "GPU_VENDORS",
    "USER_LABEL",
    "AlreadyExists",
    "CRDNotInstalled",
    "Condition",
    "Conflict",
    "CrdClient",
    "CrdError",
    "Endpoint",
    "EndpointPhase",
    "EndpointSpec",
    "EndpointStatus",
    "Expired",
    "GpuVendor",
    "Invalid",
    "InvalidTransition",
    "Job",
    "JobPhase",
    "JobSpec",
    "JobStatus",
    "NotFound",
    "RawStore",
    "TransportError",
    "Vendor",
    "WaitTimedOut",
    "billed_seconds",
    "error_from_status",
    "user_label_value",
]
