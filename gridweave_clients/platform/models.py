"""platform_service's wire models: the public API's bodies, shared with the SDK and the CLI.

Money is integer micro-credits. A job's function and arguments travel as base64 of the
SDK's pickled bytes; the platform stores them as opaque bytes and never unpickles them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Base64Bytes, BaseModel, Field

from gridweave_clients.faucet.models import Code, Email
from gridweave_clients.fields import RequestBody
from gridweave_clients.gateway.models import (
    CpuMillis,
    FunctionName,
    GpuCount,
    GpuModels,
    JobConditionResponse,
    MaxRetries,
    MemoryMb,
    TimeoutSeconds,
    Vendor,
    VramMb,
)
from gridweave_clients.images import ImageName
from gridweave_clients.pip import PipRequirements
from gridweave_controller.operations import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_SECONDS
from gridweave_controller.phases import JobPhase

__all__ = [
    "API_KEY_PREFIX",
    "IDEMPOTENCY_HEADER",
    "ApiKeyListResponse",
    "ApiKeyResponse",
    "CreateApiKeyRequest",
    "CreateUserRequest",
    "CreditsResponse",
    "JobListResponse",
    "JobLogsResponse",
    "JobResponse",
    "KeyName",
    "NewApiKeyResponse",
    "RegisteredUserResponse",
    "SignUpRequest",
    "SignUpResponse",
    "SubmitJobRequest",
    "UserResponse",
    "VerifySignUpRequest",
]

#: Every API key starts so: ``gw_live_<key id>_<secret>``; the key id names it in the API.
API_KEY_PREFIX = "gw_live_"
#: A submission carrying this header is replay-safe: the same key answers the same job.
IDEMPOTENCY_HEADER = "Idempotency-Key"

KeyName = Annotated[
    str, Field(min_length=1, max_length=100, pattern=r"^[\x20-\x7e]+$", description="A label.")
]

# -- users and keys ---------------------------------------------------------------------------


class UserResponse(BaseModel):
    """A user: the id every other service knows, the role, the verified email."""

    user_id: str
    email: str | None
    role: Literal["user", "admin"]
    created_at: datetime
    verified_at: datetime | None


class ApiKeyResponse(BaseModel):
    """A key as listed: its id and prefix (``gw_live_<key id>``), never its secret."""

    key_id: str
    prefix: str
    name: str
    created_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None = None


class ApiKeyListResponse(BaseModel):
    """A user's keys, newest first, revoked ones included."""

    keys: list[ApiKeyResponse]


class NewApiKeyResponse(ApiKeyResponse):
    """A key just issued: ``api_key`` is shown this once and never again."""

    api_key: str


class CreateApiKeyRequest(RequestBody):
    """Issue another key to the calling user."""

    name: KeyName = "default"


class CreateUserRequest(RequestBody):
    """Create a user and its first key (admins only)."""

    email: Email | None = None
    role: Literal["user", "admin"] = "user"
    key_name: KeyName = "default"


class RegisteredUserResponse(BaseModel):
    """A new user and its first key (shown once)."""

    user: UserResponse
    api_key: NewApiKeyResponse
    grant: int | None = Field(
        default=None, description="The onboarding grant in micro-credits (sign-up only)."
    )


# -- sign-up ----------------------------------------------------------------------------------


class SignUpRequest(RequestBody):
    """Send a verification code to ``email``."""

    email: Email


class SignUpResponse(BaseModel):
    """Where the code went (``smtp``, or the operator's ``outbox``) and until when it works."""

    email: str
    expires_at: datetime
    delivery: Literal["smtp", "outbox"]


class VerifySignUpRequest(RequestBody):
    """Prove the mailbox: the user, its first API key and the onboarding grant follow."""

    email: Email
    code: Code


# -- jobs -------------------------------------------------------------------------------------


class SubmitJobRequest(RequestBody):
    """Run a pickled function on ``gpu_count`` GPUs of one node with ``vram_mb`` on each.

    The hold placed is price(vendor, vram_mb) x ``timeout_seconds`` x ``gpu_count``.
    """

    function: Base64Bytes = Field(description="base64 of the pickled function (cloudpickle).")
    args: Base64Bytes | None = Field(
        default=None, description="base64 of the pickled (args, kwargs); none: no arguments."
    )
    vram_mb: VramMb
    gpu_count: GpuCount = 1
    vendor: Vendor = "any"
    timeout_seconds: TimeoutSeconds = DEFAULT_TIMEOUT_SECONDS
    max_retries: MaxRetries = DEFAULT_MAX_RETRIES
    memory_mb: MemoryMb | None = None
    cpu_millis: CpuMillis | None = None
    gpu_models: GpuModels | None = None
    image: ImageName | None = None
    pip: PipRequirements | None = None
    function_name: FunctionName | None = None


class JobResponse(BaseModel):
    """A job as its user sees it (no storage locations: results come from the API)."""

    job_id: str
    function_name: str | None = None
    phase: JobPhase
    finished: bool
    vram_mb: int
    gpu_count: int
    vendor: str
    timeout_seconds: int | None
    max_retries: int | None
    memory_mb: int | None = None
    cpu_millis: int | None = None
    gpu_models: list[str] | None = Field(
        default=None, description="The GPU models that will do (none: any of the vendor)."
    )
    image: str | None = Field(
        default=None,
        description="The image it runs in, pinned to its digest (none: the node's default).",
    )
    pip: list[str] | None = Field(
        default=None, description="The requirements installed for it (none: none)."
    )
    node: str | None
    gpu_indices: list[int]
    attempts: int
    reason: str | None
    message: str | None
    created_at: datetime | None
    allocated_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    wall_seconds: float | None
    billed_seconds: int | None
    hold_amount: int | None = Field(
        default=None, description="Micro-credits held at submission (in the submit answer)."
    )
    conditions: list[JobConditionResponse] = Field(
        default_factory=list,
        description=(
            "The status conditions, each with its last transition (the phase timeline); "
            "in one job's read only, empty in lists."
        ),
    )


class JobListResponse(BaseModel):
    """The user's jobs: all, oldest first; or, when a ``limit`` was asked, one page, newest
    first, with the count matching the filters and the next page's cursor (None: the last)."""

    jobs: list[JobResponse]
    total: int | None = None
    next_cursor: str | None = None


class JobLogsResponse(BaseModel):
    """What the job printed, from the byte offsets asked (``--follow`` passes them back).

    ``*_offset`` is where the next read starts; ``*_truncated`` says the text is only the
    tail (at most the platform's log limit) of what there was past the offset asked.
    """

    job_id: str
    phase: JobPhase
    finished: bool
    stdout: str
    stderr: str
    stdout_offset: int
    stderr_offset: int
    stdout_truncated: bool
    stderr_truncated: bool


# -- money ------------------------------------------------------------------------------------


class CreditsResponse(BaseModel):
    """The user's credits in micro-credits: ``available`` = ``balance`` - ``held``."""

    user_id: str
    balance: int
    held: int
    available: int
