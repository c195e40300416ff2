"""The admins' routes of the platform (``/v1/admin/...``): join keys, users and their credit
grants, cordoning nodes. Request and answer bodies, shared by the platform and its clients.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from gridweave_clients.credit.models import Amount
from gridweave_clients.fields import RequestBody
from gridweave_clients.nodes.models import JoinKeyResponse, NodeResponse
from gridweave_clients.platform.models import UserResponse

__all__ = [
    "CreditGrantRequest",
    "CreditGrantResponse",
    "DrainNodeResponse",
    "NewJoinKeyResponse",
    "UserListResponse",
]


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
