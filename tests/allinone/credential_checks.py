"""Per-service credentials on a running all-in-one: each service's token used on another's
routes is refused, and no process holds a token that is not its own."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from gridweave_allinone.secrets import service_tokens
from gridweave_runtime.service_roster import SERVICE_ROLES
from tests.support.allinone import AllInOneProcess, leftover_processes

__all__ = ["check_every_token_is_its_owners", "check_routes_refuse_other_credentials"]


@dataclass(frozen=True)
class Guarded:
    """A route and the credentials that may call it (acting as any of their roles)."""

    service: str
    method: str
    path: str
    allowed: frozenset[str]
    body: dict[str, Any] | None = None


_ADMINS = frozenset({"operator", "platform"})  # the platform acts as admin for admins
#: Bodies are empty: an allowed caller gets the route's 422, never a movement.
ROUTES = (
    Guarded("credit", "POST", "/v1/accounts/probe/mint", frozenset({"faucet"}) | _ADMINS, {}),
    Guarded("credit", "POST", "/v1/holds", frozenset({"metering"}), {}),
    Guarded("credit", "POST", "/v1/holds/1/capture", frozenset({"metering"}), {}),
    Guarded("credit", "POST", "/v1/holds/1/release", frozenset({"metering"}), {}),
    Guarded("credit", "POST", "/v1/settlements", frozenset({"metering"}), {}),
    Guarded("credit", "PUT", "/v1/accounts/probe/admin-spending-limits", _ADMINS, {"x": 1}),
    Guarded("credit", "GET", "/v1/books", _ADMINS),
    Guarded("metering", "POST", "/v1/holds", frozenset({"platform"}), {}),
    Guarded("metering", "POST", "/v1/releases", frozenset({"platform", "gateway"}), {}),
    Guarded("metering", "POST", "/v1/endpoint-holds", frozenset({"gateway"}), {}),
    Guarded("metering", "GET", "/v1/endpoint-holds", frozenset({"gateway"})),
    Guarded("metering", "POST", "/v1/usage", frozenset({"gateway"}), {}),
    Guarded("chain", "POST", "/v1/receipts/batch", frozenset({"metering"}), {}),
    Guarded("faucet", "POST", "/v1/signups", frozenset({"platform"}), {}),
    Guarded("faucet", "GET", "/v1/outbox", _ADMINS),
    Guarded("gateway", "POST", "/v1/jobs", frozenset({"platform"}) | _ADMINS, {}),
    Guarded("kuberay", "GET", "/v1/crd/list/jobs", frozenset({"gateway"}) | _ADMINS),
)
#: The credential each ``python -m <module>`` process of the all-in-one runs with.
_MODULE_CREDENTIAL = {
    "credit_service": "credit",
    "metering_service": "metering",
    "metering_service.deliverer": "metering",
    "faucet_service": "faucet",
    "chain_service": "chain",
    "kuberay_service": "kuberay",
    "job_gateway": "gateway",
    "platform_service": "platform",
    "registry_service": "registry",
}


def check_routes_refuse_other_credentials(platform: AllInOneProcess) -> None:
    """Every credential on every guarded route: 403 unless it is allowed there."""
    tokens = service_tokens(platform.state_dir)
    assert set(tokens) == set(SERVICE_ROLES)
    wrong: list[str] = []
    with httpx.Client(timeout=30) as client:
        for route in ROUTES:
            for name, token in tokens.items():
                answer = client.request(
                    route.method,
                    platform.url(route.service) + route.path,
                    json=route.body,
                    headers={"Authorization": f"Bearer {token}"},
                )
                refused = answer.status_code == 403
                if refused == (name in route.allowed) or answer.status_code == 401:
                    wrong.append(f"{name} on {route.method} {route.path}: {answer.status_code}")
            # a role the credential does not have is never believed from the header
            metering = {
                "Authorization": f"Bearer {tokens['metering']}",
                "X-Gridweave-Role": "admin",
            }
            answer = client.request(
                route.method,
                platform.url(route.service) + route.path,
                json=route.body,
                headers=metering,
            )
            if answer.status_code != 403:
                wrong.append(f"metering as admin on {route.path}: {answer.status_code}")
    assert wrong == [], "\n".join(wrong)


def _environment(pid: str) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    pairs = (item.decode(errors="replace").partition("=") for item in raw.split(b"\0") if item)
    return {name: value for name, _, value in pairs}


def check_every_token_is_its_owners(state_dir: Path) -> None:
    """Each service process holds its own token and no other; nothing else holds one."""
    tokens = service_tokens(state_dir)
    holders: dict[str, set[str]] = {}
    for line in leftover_processes(state_dir):
        pid, command = line.split(": ", 1)
        try:
            environment = _environment(pid)
        except OSError:  # ended since it was listed
            continue
        held = {name for name, token in tokens.items() if token in environment.values()}
        words = command.split()
        module = words[words.index("-m") + 1] if "-m" in words[:-1] else None
        expected = _MODULE_CREDENTIAL.get(module or "")
        assert held == ({expected} if expected else set()), (command, held)
        assert "GRIDWEAVE_INTERNAL_TOKEN" not in environment, command
        if expected is not None:
            holders.setdefault(expected, set()).add(module or "")
    # every credential but the operator's is some service's
    assert set(holders) == set(SERVICE_ROLES) - {"operator"}, holders
