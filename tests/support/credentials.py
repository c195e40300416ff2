"""The tests' service credentials: one token per test that may act as any role.

A deployment gives each service a token of its own (``gridweave_runtime.service_roster``);
most tests run one service and call it as each of its callers, so their token's credential
has every role of the roster (and acts as ``test`` when a call names none). The tests of
the roles themselves (``tests/gridweave_runtime/test_service_credentials.py``, the
all-in-one's) use the roster's own credentials.
"""

from __future__ import annotations

from typing import Any

from gridweave_runtime.service_roster import SERVICE_ROLES, credentials_document

__all__ = ["ALL_ROLES", "service_auth", "service_auth_env", "credentials_for"]

#: Every role a deployment's credentials give, after the tests' own.
ALL_ROLES = ("test", *sorted({role for roles in SERVICE_ROLES.values() for role in roles}))


def credentials_for(*tokens: str) -> str:
    """A credentials document in which each of ``tokens`` may act as any role."""
    roles = {f"test-{index}": ALL_ROLES for index in range(len(tokens))}
    return credentials_document(
        {f"test-{index}": token for index, token in enumerate(tokens)}, roles
    )


def service_auth(token: str) -> dict[str, Any]:
    """A service's settings (by field name) for a test whose one token acts as any role;
    the Serve key derives from the same token."""
    return {
        "service_token": token,
        "credentials": credentials_for(token),
        "serve_key_secret": token,
    }


def service_auth_env(token: str) -> dict[str, str]:
    """:func:`service_auth` as a service process's environment."""
    return {
        "GRIDWEAVE_SERVICE_TOKEN": token,
        "GRIDWEAVE_CREDENTIALS": credentials_for(token),
        "GRIDWEAVE_SERVE_KEY": token,
    }
