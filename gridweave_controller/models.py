"""Typed, immutable views of GridweaveJob and GridweaveEndpoint objects (pydantic v2).

Field names are the snake_case of the CRD's camelCase wire names (``vramMb`` ->
``vram_mb``). Each object keeps the raw dict it was read from in ``raw`` (for fields the
model does not name, such as ``managedFields``); treat it as read-only. A missing
``status`` reads as phase Pending.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from functools import cached_property
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SkipValidation
from pydantic.alias_generators import to_camel

from gridweave_controller.conditions import ConditionStatus
from gridweave_controller.phases import EndpointPhase, JobPhase
from gridweave_controller.validation import EndpointMode
from gridweave_controller.vendors import GpuVendor, Vendor

__all__ = [
    "Condition",
    "Endpoint",
    "EndpointMode",
    "EndpointPricing",
    "EndpointSpec",
    "EndpointStatus",
    "Health",
    "Job",
    "JobSpec",
    "JobStatus",
    "ObjectMeta",
    "Vendor",
]

Health = Literal["Unknown", "Healthy", "Unhealthy"]


class _WireModel(BaseModel):
    """camelCase on the wire, snake_case in Python, frozen, unknown fields ignored."""

    model_config = ConfigDict(
        frozen=True, alias_generator=to_camel, populate_by_name=True, extra="ignore"
    )


class Condition(_WireModel):
    """One ``metav1.Condition``."""

    type: str
    status: ConditionStatus
    reason: str
    message: str = ""
    last_transition_time: datetime
    observed_generation: int | None = None


class ObjectMeta(_WireModel):
    """The part of ``metadata`` Gridweave reads."""

    name: str
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation_timestamp: datetime | None = None
    labels: dict[str, str] = Field(default_factory=dict)


class MapShare(_WireModel):
    """``GridweaveJob.spec.map``: the job is worker ``worker`` of ``workers`` of map
    ``map_id`` over ``items`` inputs (``chunk_items`` to a chunk; worker k runs chunks k,
    k + workers, ...), an input that raises tried again ``retries`` times at most."""

    map_id: str
    worker: int
    workers: int
    items: int
    chunk_items: int
    retries: int = 0


class JobSpec(_WireModel):
    """``GridweaveJob.spec``: what to run and on how much GPU."""

    user_id: str
    function_ref: str
    vram_mb: int
    gpu_count: int = 1
    vendor: Vendor = "any"
    owner: str = ""
    timeout_seconds: int | None = None
    max_retries: int | None = None
    #: The job's container's memory limit (MiB) and CPU (thousandths of a core); None:
    #: the node's default per GPU slice.
    memory_mb: int | None = None
    cpu_millis: int | None = None
    #: The GPU models that will do (any of them); None: any model of ``vendor``.
    gpu_models: tuple[str, ...] | None = None
    #: The image the job runs in, pinned to its digest (``repo@sha256:...``); None: the
    #: node's default image.
    image: str | None = None
    #: PEP 508 requirements installed for the job (an environment per node, image and
    #: list); None: none.
    pip: tuple[str, ...] | None = None
    args_ref: str | None = None
    priority: int = 0
    function_name: str | None = None
    #: The job is one worker of a map (its share of the inputs); None: a single call.
    map: MapShare | None = None


class JobStatus(_WireModel):
    """``GridweaveJob.status``; an object never written reads as Pending."""

    phase: JobPhase = JobPhase.PENDING
    node: str | None = None
    gpu_indices: tuple[int, ...] = ()
    allocated_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    wall_seconds: float | None = None
    billed_seconds: int | None = None
    #: The running seconds of earlier attempts that were lost and requeued; billed with
    #: the last attempt's (``billed_seconds`` counts both).
    earlier_seconds: float = 0.0
    #: Where the last lost attempt ran: its seconds are billed there when no later attempt
    #: held a GPU (requeued, then cancelled or failed before it was placed again).
    earlier_node: str | None = None
    earlier_gpu_indices: tuple[int, ...] = ()
    attempts: int = 0
    reason: str | None = None
    message: str | None = None
    result_ref: str | None = None
    #: SHA-256 of the result object as the trusted worker stored it: the SDK checks the
    #: bytes it is served against it before it unpickles them.
    result_sha256: str | None = None
    observed_generation: int | None = None
    conditions: tuple[Condition, ...] = ()

    def condition(self, type_: str) -> Condition | None:
        """The condition of that type, if set."""
        return next((c for c in self.conditions if c.type == type_), None)


class _Resource(BaseModel):
    """A raw object with typed views: metadata, spec and status are parsed on first use.

    Parsing lazily keeps a list of 1,000 objects as cheap as the raw call; each view is
    validated once and cached. Equality is equality of the raw objects.
    """

    model_config = ConfigDict(frozen=True)

    raw: Annotated[dict[str, Any], SkipValidation] = Field(repr=False)

    @cached_property
    def metadata(self) -> ObjectMeta:
        """``metadata``, typed."""
        return ObjectMeta.model_validate(self.raw["metadata"])

    @property
    def name(self) -> str:
        """The object's id (``metadata.name``)."""
        return str(self.raw["metadata"]["name"])

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        yield "name", self.raw.get("metadata", {}).get("name")
        yield "phase", (self.raw.get("status") or {}).get("phase", "Pending")


class Job(_Resource):
    """A GridweaveJob as read from the store."""

    KIND: ClassVar[str] = "GridweaveJob"

    @cached_property
    def spec(self) -> JobSpec:
        """``spec``, typed."""
        return JobSpec.model_validate(self.raw.get("spec") or {})

    @cached_property
    def status(self) -> JobStatus:
        """``status``, typed; a missing status reads as Pending."""
        status = self.raw.get("status")
        return JobStatus.model_validate(status) if status else _PENDING_JOB

    @property
    def phase(self) -> JobPhase:
        """The current phase."""
        return self.status.phase

    @property
    def billing_owner(self) -> str:
        """The account billed: ``spec.owner``, else the user."""
        return self.spec.owner or self.spec.user_id

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> Job:
        """The typed view of a raw object (``raw`` is kept, not copied)."""
        return cls(raw=raw)


class EndpointPricing(_WireModel):
    """What callers of an endpoint pay, in integer micro-credits."""

    micro_credits_per_second: int = 0
    micro_credits_per_request: int = 0


class EndpointSpec(_WireModel):
    """``GridweaveEndpoint.spec``: what to serve and on how much GPU."""

    user_id: str
    mode: EndpointMode
    vram_mb: int
    owner: str = ""
    model: str | None = None
    model_ref: str | None = None
    function_ref: str | None = None
    image: str | None = None
    #: PEP 508 requirements installed for its replicas' containers (custom mode only; an
    #: environment per node, image and list); None: none.
    pip: tuple[str, ...] | None = None
    gpu_count: int = 1
    vendor: Vendor = "any"
    #: The GPU models that will do (any of them); None: any model of ``vendor``.
    gpu_models: tuple[str, ...] | None = None
    #: Each replica's memory (MiB) and CPU (thousandths of a core) on its node; None: the
    #: node's default per GPU slice.
    memory_mb: int | None = None
    cpu_millis: int | None = None
    replicas: int = 1
    #: Replicas kept while Running; Ray Serve autoscales between these on queue length.
    min_replicas: int = 0
    max_replicas: int = 1
    #: Stopped (reason ``Idle``) after this many seconds without a request; 0 never.
    idle_seconds: int = 0
    pricing: EndpointPricing = Field(default_factory=EndpointPricing)


class EndpointStatus(_WireModel):
    """``GridweaveEndpoint.status``; an object never written reads as Pending."""

    phase: EndpointPhase = EndpointPhase.PENDING
    url: str | None = None
    node: str | None = None
    gpu_indices: tuple[int, ...] = ()
    #: The maker of the GPUs it was placed on (written with the placement); None: unknown.
    vendor: GpuVendor | None = None
    #: When the current placement was written (Deploying): an application deployed before
    #: it served an earlier placement.
    placed_at: datetime | None = None
    ready_replicas: int = 0
    health: Health = "Unknown"
    started_at: datetime | None = None
    stopped_at: datetime | None = None
    #: The ready replicas last probed in the current (or last) run; kept when it ends.
    run_replicas: int | None = None
    billed_seconds: int = 0
    reason: str | None = None
    message: str | None = None
    observed_generation: int | None = None
    conditions: tuple[Condition, ...] = ()

    def condition(self, type_: str) -> Condition | None:
        """The condition of that type, if set."""
        return next((c for c in self.conditions if c.type == type_), None)


class Endpoint(_Resource):
    """A GridweaveEndpoint as read from the store."""

    KIND: ClassVar[str] = "GridweaveEndpoint"

    @cached_property
    def spec(self) -> EndpointSpec:
        """``spec``, typed."""
        return EndpointSpec.model_validate(self.raw.get("spec") or {})

    @cached_property
    def status(self) -> EndpointStatus:
        """``status``, typed; a missing status reads as Pending."""
        status = self.raw.get("status")
        return EndpointStatus.model_validate(status) if status else _PENDING_ENDPOINT

    @property
    def phase(self) -> EndpointPhase:
        """The current phase."""
        return self.status.phase

    @property
    def billing_owner(self) -> str:
        """The account billed: ``spec.owner``, else the user."""
        return self.spec.owner or self.spec.user_id

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> Endpoint:
        """The typed view of a raw object (``raw`` is kept, not copied)."""
        return cls(raw=raw)


_PENDING_JOB = JobStatus()
_PENDING_ENDPOINT = EndpointStatus()
