"""Who may act as whom: the services' credentials and the roles each may act as, and how a
deployment's credentials document is made.

Standard library only, so ``deploy.sh`` runs it on a bare host
(``python3 -I gridweave_runtime/service_roster.py NAME=TOKEN...`` prints the document;
``-I``: this directory's ``secrets.py`` must not stand in for the standard library's); the
services read the document with ``gridweave_runtime.credentials``.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sys
from collections.abc import Iterable, Mapping

__all__ = [
    "SERVICE_ROLES",
    "credential_of_role",
    "credentials_document",
    "new_service_tokens",
    "token_digest",
]

#: Each credential a deployment makes, and the roles it may act as (its own first).
#: - ``platform`` also acts as ``admin``, only for a signed-in admin user's request: it is
#:   the admins' front door (their grants, caps, join keys and outbox reads pass through it).
#: - ``operator`` is the deployment's own administrator: ``gridweave up``'s supervisor (the
#:   seed's credits, the mail relay) and ``deploy.sh``; it never serves a request.
SERVICE_ROLES: Mapping[str, tuple[str, ...]] = {
    "platform": ("platform", "admin"),
    "gateway": ("gateway",),
    "metering": ("metering",),
    "credit": ("credit",),
    "faucet": ("faucet",),
    "chain": ("chain",),
    "kuberay": ("kuberay",),
    "registry": ("registry",),
    "operator": ("admin",),
}

_TOKEN_BYTES = 32


def token_digest(token: str | bytes) -> str:
    """The SHA-256 of ``token`` (hex): what the credentials document keeps of it."""
    raw = token.encode() if isinstance(token, str) else token
    return hashlib.sha256(raw).hexdigest()


def credential_of_role(role: str) -> str:
    """The credential whose own role ``role`` is (``admin``: the operator's); KeyError: none."""
    for name, roles in SERVICE_ROLES.items():
        if roles[0] == role:
            return name
    raise KeyError(role)


def new_service_tokens(names: Iterable[str] = SERVICE_ROLES) -> dict[str, str]:
    """A fresh random token for each of ``names``."""
    return {name: secrets.token_urlsafe(_TOKEN_BYTES) for name in names}


def credentials_document(
    tokens: Mapping[str, str], roles: Mapping[str, tuple[str, ...]] = SERVICE_ROLES
) -> str:
    """The credentials document (JSON) of ``tokens`` (service name -> token), each with the
    roles ``roles`` gives its name."""
    entries = [
        {"name": name, "sha256": token_digest(token), "roles": list(roles[name])}
        for name, token in tokens.items()
    ]
    return json.dumps({"credentials": entries}, separators=(",", ":"))


def main(argv: list[str]) -> int:
    """``python -m gridweave_runtime.credentials NAME=TOKEN...``: print the document."""
    tokens: dict[str, str] = {}
    for argument in argv:
        name, _, token = argument.partition("=")
        if name not in SERVICE_ROLES or not token:
            known = ", ".join(SERVICE_ROLES)
            print(f"expected NAME=TOKEN with NAME one of {known}; got {name!r}", file=sys.stderr)
            return 2
        tokens[name] = token
    if not tokens:
        print("usage: python -m gridweave_runtime.credentials NAME=TOKEN...", file=sys.stderr)
        return 2
    print(credentials_document(tokens))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
