"""The admins' routes of the platform (``/v1/admin/...``): join keys, users and their credit
grants, cordoning nodes. Request and answer bodies, shared by the platform and its clients,
and the routes as typed operations (sans-IO).

Money is integer micro-credits (1 credit = 1,000,000); :func:`parse_credits` reads a
decimal amount of credits without floats.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import replace
from typing import Annotated
from urllib.parse import quote

from pydantic import BaseModel, Field, validate_call

from gridweave_clients._core import Operation, model_operation
from gridweave_clients.credit.models import MAX_AMOUNT, Amount
from gridweave_clients.fields import RequestBody
from gridweave_clients.nodes.models import (
    MAX_JOIN_KEY_TTL_SECONDS,
    CordonNodeRequest,
    CreateJoinKeyRequest,
    JoinKeyListResponse,
    JoinKeyResponse,
    NodeListResponse,
    NodeName,
    NodeResponse,
)
from gridweave_clients.nodes.operations import JoinKeyId
from gridweave_clients.platform.models import IDEMPOTENCY_HEADER, UserResponse
from gridweave_clients.platform.registry import UserId
from gridweave_controller.vendors import GpuVendor

__all__ = [
    "MICRO_CREDITS_PER_CREDIT",
    "CreditGrantRequest",
    "CreditGrantResponse",
    "DrainNodeResponse",
    "GrantKey",
    "NewJoinKeyResponse",
    "UserListResponse",
    "cordon_node",
    "create_join_key",
    "drain_node",
    "grant_credits",
    "list_join_keys",
    "list_joined_nodes",
    "list_users",
    "new_grant_key",
    "parse_credits",
    "revoke_join_key",
    "uncordon_node",
]

MICRO_CREDITS_PER_CREDIT = 1_000_000
#: The key that makes a grant happen once: the platform mints again only for a new one.
GrantKey = Annotated[
    str, Field(strict=True, min_length=8, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
]
_CREDITS = re.compile(r"^(\d+)(?:\.(\d{1,6}))?$")


class NewJoinKeyResponse(JoinKeyResponse):
    """A join key just created: ``key`` and ``join_command`` are shown this once."""

    key: str
    join_command: str = Field(description="What to run, as root, on the machine that joins.")


class UserListResponse(BaseModel):
    """One page of users, oldest first, and how many there are in all."""

    users: list[UserResponse]
    total: int


class CreditGrantRequest(RequestBody):
    """Credits an admin gives a user (micro-credits)."""

    amount: Amount


class CreditGrantResponse(BaseModel):
    """A grant made (or, for the same ``Idempotency-Key``, the grant made before)."""

    user_id: str
    amount: int
    idempotency_key: str
    balance: int = Field(description="The account's balance right after the grant.")
    available: int = Field(description="Balance less holds, right after the grant.")


class DrainNodeResponse(BaseModel):
    """A node being drained: cordoned, and what still runs there is left to finish."""

    node: NodeResponse
    held_mb: int = Field(description="VRAM jobs and endpoints still hold on the node, MiB.")
    drained: bool = Field(description="Nothing holds the node any more: it may be taken down.")


# -- credits as text --------------------------------------------------------------------------


def parse_credits(text: str) -> int:
    """``"2.5"`` credits as ``2_500_000`` micro-credits, on integers only (six decimals at
    most; ``,`` and ``_`` group digits).

    Raises:
        ValueError: not a positive amount of credits, or more than one call may grant.
    """
    match = _CREDITS.match(text.strip().replace(",", "").replace("_", ""))
    if match is None:
        raise ValueError(
            f"{text!r}: expected credits such as 10, 2.5 or 0.000001 (six decimals at most)"
        )
    whole, fraction = match.group(1), match.group(2) or ""
    amount = int(whole) * MICRO_CREDITS_PER_CREDIT + int(fraction.ljust(6, "0"))
    if amount <= 0:
        raise ValueError(f"{text!r}: the amount must be more than 0")
    if amount > MAX_AMOUNT:
        limit = MAX_AMOUNT // MICRO_CREDITS_PER_CREDIT
        raise ValueError(f"{text!r}: one grant gives at most {limit:,} credits")
    return amount


def new_grant_key() -> str:
    """A fresh grant key (32 hex digits)."""
    return uuid.uuid4().hex


# -- join keys --------------------------------------------------------------------------------

JOIN_KEYS_PATH = "/v1/admin/join-keys"


def list_join_keys() -> Operation[JoinKeyListResponse]:
    """Every join key, newest first, never the keys themselves (admins)."""
    return model_operation("GET", JOIN_KEYS_PATH, JoinKeyListResponse)


@validate_call
def create_join_key(
    *,
    ttl_seconds: Annotated[int, Field(strict=True, ge=60, le=MAX_JOIN_KEY_TTL_SECONDS)] = 86_400,
    max_uses: Annotated[int, Field(strict=True, ge=1, le=10_000)] = 1,
    max_gpus: int | None = None,
    vendor: GpuVendor | None = None,
    description: str = "",
) -> Operation[NewJoinKeyResponse]:
    """A new join key and the command that joins a machine with it, both shown this once
    (admins; a write without an idempotency key: not retried once it may have arrived)."""
    body = CreateJoinKeyRequest(
        ttl_seconds=ttl_seconds,
        max_uses=max_uses,
        max_gpus=max_gpus,
        vendor=vendor,
        description=description,
    )
    return model_operation("POST", JOIN_KEYS_PATH, NewJoinKeyResponse, body=body)


@validate_call
def revoke_join_key(key_id: JoinKeyId) -> Operation[JoinKeyResponse]:
    """Revoke a join key: no machine joins with it any more; joined nodes stay (admins;
    revoking twice changes nothing)."""
    return model_operation("DELETE", f"{JOIN_KEYS_PATH}/{key_id}", JoinKeyResponse)


# -- nodes ------------------------------------------------------------------------------------


def list_joined_nodes() -> Operation[NodeListResponse]:
    """The nodes joined with a join key: readiness, cordoned, last heartbeat, GPUs (admins)."""
    return model_operation("GET", "/v1/admin/nodes", NodeListResponse)


def _node_path(name: str, action: str) -> str:
    return f"/v1/admin/nodes/{quote(name, safe='')}/{action}"


@validate_call
def cordon_node(name: NodeName) -> Operation[NodeResponse]:
    """Cordon a node: no new placements, what runs there stays (admins; Conflict
    ``node_not_joined`` for a node no join key joined)."""
    body = CordonNodeRequest(cordoned=True)
    return model_operation(
        "PUT", _node_path(name, "cordon"), NodeResponse, body=body, idempotent=True
    )


@validate_call
def uncordon_node(name: NodeName) -> Operation[NodeResponse]:
    """Uncordon a node: it takes new work again (admins)."""
    body = CordonNodeRequest(cordoned=False)
    return model_operation(
        "PUT", _node_path(name, "cordon"), NodeResponse, body=body, idempotent=True
    )


@validate_call
def drain_node(name: NodeName) -> Operation[DrainNodeResponse]:
    """Cordon a node and say how much VRAM is still held there; nothing is cancelled, so it
    is drained once ``drained`` (call again to follow it; admins)."""
    return model_operation("POST", _node_path(name, "drain"), DrainNodeResponse, idempotent=True)


# -- users and grants -------------------------------------------------------------------------


@validate_call
def list_users(
    *,
    limit: Annotated[int, Field(strict=True, ge=1, le=500)] = 100,
    offset: Annotated[int, Field(strict=True, ge=0, le=10**9)] = 0,
) -> Operation[UserListResponse]:
    """One page of users, oldest first, and how many there are (admins)."""
    params = {"limit": str(limit), "offset": str(offset)}
    return model_operation("GET", "/v1/admin/users", UserListResponse, params=params)


@validate_call
def grant_credits(
    user_id: UserId, amount: Amount, *, idempotency_key: GrantKey | None = None
) -> Operation[CreditGrantResponse]:
    """Give a user ``amount`` micro-credits (admins).

    The grant is made once per ``idempotency_key``: the same key again answers the first
    grant and mints nothing (another amount with it is a Conflict). Without one a new key is
    drawn for this operation, so the client's own retries are safe, but calling again (a
    re-run command) grants again: pass the same key to make a repeated call safe.
    """
    path = f"/v1/admin/users/{quote(user_id, safe='')}/credit-grants"
    body = CreditGrantRequest(amount=amount)
    operation = model_operation("POST", path, CreditGrantResponse, body=body, idempotent=True)
    headers = {IDEMPOTENCY_HEADER: idempotency_key or new_grant_key()}
    return replace(operation, call=replace(operation.call, headers=headers))
