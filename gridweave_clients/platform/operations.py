"""platform_service's public routes as typed operations (sans-IO), each declared once.

The SDK and the CLI send these with the user's API key. Reads are replayable and so is a
cancel; a submission is replayable only with an idempotency key (without one a retry
could run the function twice, so a lost answer raises ``ServiceUnavailable``).
"""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Annotated, Literal
from urllib.parse import quote

from pydantic import Field, validate_call

from gridweave_clients._core import Call, Operation, model_operation
from gridweave_clients.chain.models import ReceiptProofResponse
from gridweave_clients.credit.models import IdempotencyKey
from gridweave_clients.faucet.models import Code, Email, RefillResponse
from gridweave_clients.fields import DatabaseId, UtcDatetime
from gridweave_clients.gateway.models import (
    CpuMillis,
    FunctionName,
    GpuCount,
    GpuModels,
    InventoryResponse,
    JobId,
    MaxRetries,
    MemoryMb,
    TimeoutSeconds,
    Vendor,
    VramMb,
    WaitSeconds,
)
from gridweave_clients.images import ImageName
from gridweave_clients.metering.models import UsagePageResponse
from gridweave_clients.metering.pricing import PriceTable
from gridweave_clients.pip import PipRequirements
from gridweave_clients.platform.models import (
    IDEMPOTENCY_HEADER,
    ApiKeyListResponse,
    ApiKeyResponse,
    CreateApiKeyRequest,
    CreateUserRequest,
    CreditsResponse,
    JobListResponse,
    JobLogsResponse,
    JobResponse,
    KeyName,
    NewApiKeyResponse,
    RegisteredUserResponse,
    SignUpRequest,
    SignUpResponse,
    SubmitJobRequest,
    UserResponse,
    VerifySignUpRequest,
)
from gridweave_clients.platform.registry import (
    PullTokenRequest,
    PullTokenResponse,
    RegistryShareListResponse,
    RegistryShareResponse,
    RegistryUsageResponse,
    Repository,
    SetRegistryQuotaRequest,
    ShareRepositoryRequest,
    UserId,
)
from gridweave_clients.platform.results import checked_result
from gridweave_controller.operations import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_SECONDS
from gridweave_controller.phases import JobPhase

__all__ = [
    "cancel_job",
    "create_key",
    "create_user",
    "get_credits",
    "get_prices",
    "get_job",
    "get_job_logs",
    "get_job_result",
    "get_me",
    "get_receipt",
    "get_registry_quota",
    "get_registry_usage",
    "list_registry_shares",
    "list_jobs",
    "list_keys",
    "list_nodes",
    "list_usage",
    "request_refill",
    "revoke_key",
    "set_registry_quota",
    "share_repository",
    "sign_up",
    "submit_job",
    "unshare_repository",
    "verify_sign_up",
]

KeyId = Annotated[str, Field(pattern=r"^[0-9a-f]{12}$")]
Offset = Annotated[int, Field(strict=True, ge=0, le=2**62)]
PageLimit = Annotated[int, Field(strict=True, ge=1, le=1000)]

# -- users and keys ---------------------------------------------------------------------------


def get_me() -> Operation[UserResponse]:
    """The user the API key belongs to."""
    return model_operation("GET", "/v1/me", UserResponse)


@validate_call
def create_user(
    *,
    email: Email | None = None,
    role: Literal["user", "admin"] = "user",
    key_name: KeyName = "default",
) -> Operation[RegisteredUserResponse]:
    """A new user and its first key, shown once (admins only)."""
    body = CreateUserRequest(email=email, role=role, key_name=key_name)
    return model_operation("POST", "/v1/users", RegisteredUserResponse, body=body)


def list_keys() -> Operation[ApiKeyListResponse]:
    """The caller's keys (ids and prefixes, never secrets), newest first."""
    return model_operation("GET", "/v1/keys", ApiKeyListResponse)


@validate_call
def create_key(name: KeyName = "default") -> Operation[NewApiKeyResponse]:
    """Another key for the caller, shown in this answer only."""
    body = CreateApiKeyRequest(name=name)
    return model_operation("POST", "/v1/keys", NewApiKeyResponse, body=body)


@validate_call
def revoke_key(key_id: KeyId) -> Operation[ApiKeyResponse]:
    """Revoke one of the caller's keys (again: answered as it is)."""
    return model_operation("DELETE", f"/v1/keys/{key_id}", ApiKeyResponse)


# -- sign-up (public) -------------------------------------------------------------------------


@validate_call
def sign_up(email: Email) -> Operation[SignUpResponse]:
    """Have a six-digit code sent to ``email``."""
    return model_operation("POST", "/v1/signups", SignUpResponse, body=SignUpRequest(email=email))


@validate_call
def verify_sign_up(email: Email, code: Code) -> Operation[RegisteredUserResponse]:
    """The code: the new user, its first API key (shown once) and the onboarding grant."""
    body = VerifySignUpRequest(email=email, code=code)
    return model_operation("POST", "/v1/signups/verify", RegisteredUserResponse, body=body)


# -- jobs -------------------------------------------------------------------------------------


@validate_call
def submit_job(
    function: bytes,
    args: bytes | None = None,
    *,
    vram_mb: VramMb,
    gpu_count: GpuCount = 1,
    vendor: Vendor = "any",
    timeout_seconds: TimeoutSeconds = DEFAULT_TIMEOUT_SECONDS,
    max_retries: MaxRetries = DEFAULT_MAX_RETRIES,
    idempotency_key: IdempotencyKey | None = None,
    function_name: FunctionName | None = None,
    memory_mb: MemoryMb | None = None,
    cpu_millis: CpuMillis | None = None,
    image: ImageName | None = None,
    pip: PipRequirements | None = None,
    gpu_models: GpuModels | None = None,
) -> Operation[JobResponse]:
    """Run the pickled ``function`` with the pickled ``(args, kwargs)`` (402, 422, 413).

    With ``idempotency_key`` the call is replayable: a retry after a lost answer gets the
    same job back instead of running the function twice.
    """
    body = SubmitJobRequest(
        function=base64.b64encode(function),
        args=None if args is None else base64.b64encode(args),
        vram_mb=vram_mb,
        gpu_count=gpu_count,
        vendor=vendor,
        timeout_seconds=timeout_seconds,
        max_retries=max_retries,
        memory_mb=memory_mb,
        cpu_millis=cpu_millis,
        gpu_models=gpu_models,
        image=image,
        pip=pip,
        function_name=function_name,
    )
    operation = model_operation(
        "POST", "/v1/jobs", JobResponse, body=body, idempotent=idempotency_key is not None
    )
    if idempotency_key is None:
        return operation
    headers = {IDEMPOTENCY_HEADER: idempotency_key}
    return replace(operation, call=replace(operation.call, headers=headers))


@validate_call
def get_job(job_id: JobId) -> Operation[JobResponse]:
    """One of the caller's jobs."""
    return model_operation("GET", f"/v1/jobs/{job_id}", JobResponse)


@validate_call
def list_jobs(
    phase: JobPhase | None = None,
    *,
    limit: Annotated[int, Field(ge=1, le=500)] | None = None,
    cursor: Annotated[str, Field(max_length=400)] | None = None,
) -> Operation[JobListResponse]:
    """The caller's jobs, oldest first, optionally in one phase; with ``limit``, one page of
    them, newest first, with ``total`` and the ``next_cursor`` to pass as ``cursor``."""
    params = {} if phase is None else {"phase": phase.value}
    if limit is not None:
        params["limit"] = str(limit)
    if cursor is not None:
        params["cursor"] = cursor
    return model_operation("GET", "/v1/jobs", JobListResponse, params=params)


@validate_call
def cancel_job(job_id: JobId) -> Operation[JobResponse]:
    """Cancel a job that has not finished (Conflict ``job_finished`` once it has)."""
    return model_operation("POST", f"/v1/jobs/{job_id}/cancel", JobResponse, idempotent=True)


@validate_call
def get_job_result(job_id: JobId, *, wait: WaitSeconds = 0) -> Operation[bytes]:
    """The pickled return value, checked against the digest the job recorded
    (ServiceUnavailable, not unpickled, when it does not match); Conflict
    ``job_not_finished`` or ``job_did_not_complete`` (its details carry ``phase``,
    ``reason`` and the remote ``traceback``). ``wait`` > 0: the platform answers as soon as
    the job finishes, or after ``wait`` seconds."""
    params = {"wait": str(wait)} if wait else None
    call = Call("GET", f"/v1/jobs/{quote(job_id)}/result", params=params, wait_seconds=wait)
    return Operation(call, bytes, read=checked_result)


@validate_call
def get_job_logs(
    job_id: JobId, *, stdout_offset: Offset = 0, stderr_offset: Offset = 0
) -> Operation[JobLogsResponse]:
    """stdout and stderr from the byte offsets given (pass back the ones answered)."""
    params = {"stdout_offset": str(stdout_offset), "stderr_offset": str(stderr_offset)}
    return model_operation("GET", f"/v1/jobs/{job_id}/logs", JobLogsResponse, params=params)


@validate_call
def get_receipt(job_id: JobId) -> Operation[ReceiptProofResponse]:
    """The job's receipt with its chain position, Merkle path and, once anchored, the CometBFT
    proof: what ``gridweave_clients.chain.verify_receipt`` checks (NotFound until settled)."""
    return model_operation("GET", f"/v1/receipts/{job_id}", ReceiptProofResponse)


# -- money, usage, nodes ----------------------------------------------------------------------


def get_credits() -> Operation[CreditsResponse]:
    """Balance, held and available micro-credits."""
    return model_operation("GET", "/v1/credits", CreditsResponse)


def get_prices() -> Operation[PriceTable]:
    """Micro-credits per GPU-second by vendor and VRAM tier: what a job or an endpoint
    replica is billed at (metering's table)."""
    return model_operation("GET", "/v1/prices", PriceTable)


def request_refill() -> Operation[RefillResponse]:
    """A refill from the faucet while the balance is low."""
    return model_operation("POST", "/v1/credits/refill", RefillResponse)


@validate_call
def list_usage(
    *,
    period_from: UtcDatetime | None = None,
    period_to: UtcDatetime | None = None,
    limit: PageLimit = 100,
    before_id: DatabaseId | None = None,
) -> Operation[UsagePageResponse]:
    """The caller's usage that finished in [from, to), newest first, with the totals."""
    params = {"limit": str(limit)}
    if period_from is not None:
        params["from"] = period_from.isoformat()
    if period_to is not None:
        params["to"] = period_to.isoformat()
    if before_id is not None:
        params["before_id"] = str(before_id)
    return model_operation("GET", "/v1/usage", UsagePageResponse, params=params)


def list_nodes() -> Operation[InventoryResponse]:
    """Every node and GPU with its VRAM, held and free."""
    return model_operation("GET", "/v1/nodes", InventoryResponse)


# -- the image registry -----------------------------------------------------------------------


def get_registry_usage() -> Operation[RegistryUsageResponse]:
    """What the caller's images take in the registry, and its quota."""
    return model_operation("GET", "/v1/registry/usage", RegistryUsageResponse)


@validate_call
def get_registry_quota(user_id: UserId) -> Operation[RegistryUsageResponse]:
    """A user's registry usage and quota (admins only)."""
    path = f"/v1/admin/users/{quote(user_id, safe='')}/registry-quota"
    return model_operation("GET", path, RegistryUsageResponse)


@validate_call
def set_registry_quota(
    user_id: UserId, quota_bytes: Annotated[int, Field(strict=True, ge=0, le=2**62)]
) -> Operation[RegistryUsageResponse]:
    """Set a user's registry quota, bytes, in force from its next push (admins only)."""
    path = f"/v1/admin/users/{quote(user_id, safe='')}/registry-quota"
    body = SetRegistryQuotaRequest(quota_bytes=quota_bytes)
    return model_operation("PUT", path, RegistryUsageResponse, body=body, idempotent=True)


@validate_call
def issue_pull_token(user_id: UserId, repository: Repository) -> Operation[PullTokenResponse]:
    """A registry token for a node to pull a job's image with its owner's rights (the
    gateway, with its service token)."""
    body = PullTokenRequest(user_id=user_id, repository=repository)
    return model_operation(
        "POST", "/v1/registry/pull-tokens", PullTokenResponse, body=body, idempotent=True
    )


def list_registry_shares() -> Operation[RegistryShareListResponse]:
    """The caller's repositories shared with others, and others' shared with the caller."""
    return model_operation("GET", "/v1/registry/shares", RegistryShareListResponse)


@validate_call
def share_repository(repository: Repository, user_id: UserId) -> Operation[RegistryShareResponse]:
    """Let ``user_id`` pull one of the caller's repositories."""
    body = ShareRepositoryRequest(repository=repository, user_id=user_id)
    return model_operation(
        "POST", "/v1/registry/shares", RegistryShareResponse, body=body, idempotent=True
    )


@validate_call
def unshare_repository(repository: Repository, user_id: UserId) -> Operation[RegistryShareResponse]:
    """Stop sharing a repository with a user."""
    params = {"repository": repository, "user_id": user_id}
    return model_operation("DELETE", "/v1/registry/shares", RegistryShareResponse, params=params)
