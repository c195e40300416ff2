"""``gridweave admin`` join keys, nodes, users and grants, run against the real platform over
the real node registry, a gateway reading it, and credit_service (real HTTP, PostgreSQL)."""

from __future__ import annotations

import json
import re
from datetime import datetime

import pytest

from gridweave_cli import admin_nodes
from gridweave_cli.exit_codes import ExitCode
from gridweave_controller import JobPhase
from tests.cli.helpers import Invoke, as_user, json_of
from tests.job_gateway.gateway_factories import GatewayServer, submit_body
from tests.kuberay_service.node_factories import Registry, validate, validate_body
from tests.platform_service.admin_stack import (
    FILE_NODE,
    MASTER,
    join_with,
    until_schedulable,
)
from tests.platform_service.factories import PlatformServer
from tests.support.credit_server import INTERNAL_TOKEN

pytestmark = pytest.mark.postgres

FORBIDDEN = "this route is for admins"


@pytest.fixture
def as_admin(monkeypatch: pytest.MonkeyPatch, admin_platform: PlatformServer) -> PlatformServer:
    """The commands run as ``admin_platform``'s admin."""
    as_user(monkeypatch, admin_platform, admin_platform.admin)
    return admin_platform


def _created_key(gridweave: Invoke, *args: str) -> tuple[str, str, str]:
    """``join-key create ARGS``: the key, the join command it printed and the key's id."""
    result = gridweave("admin", "join-key", "create", *args)
    assert result.exit_code == 0, result.output
    key = re.search(r"^key: (gwjk_\S+)$", result.stdout, re.MULTILINE)
    command = re.search(r"^sudo deploy/join-node\.sh .*$", result.stdout, re.MULTILINE)
    key_id = re.search(r"^Join key (jk_[0-9a-f]+):", result.stderr, re.MULTILINE)
    assert key is not None and command is not None and key_id is not None, result.output
    return key.group(1), command.group(0), key_id.group(1)


def _listed_row(gridweave: Invoke, key_id: str) -> str:
    result = gridweave("admin", "join-keys")
    assert result.exit_code == 0, result.output
    return next(line for line in result.stdout.splitlines() if key_id in line.split())


def _node_row(gridweave: Invoke, name: str) -> list[str]:
    """The words of the node's row in ``admin nodes``."""
    result = gridweave("admin", "nodes")
    assert result.exit_code == 0, result.output
    return next(line.split() for line in result.stdout.splitlines() if name in line.split())


def _seconds(created: dict[str, str], field: str) -> float:
    end, start = (
        datetime.fromisoformat(created[field]),
        datetime.fromisoformat(created["created_at"]),
    )
    return (end - start).total_seconds()


class TestJoinKeys:
    def test_a_key_is_created_listed_used_and_revoked(
        self, gridweave: Invoke, as_admin: PlatformServer, node_registry: Registry
    ) -> None:
        key, command, key_id = _created_key(gridweave, "--uses", "1", "--ttl", "1h")
        assert command == f"sudo deploy/join-node.sh --master {MASTER} --join-key {key}"
        listed = json_of(gridweave("admin", "join-keys", "--json"))["join_keys"]
        entry = next(entry for entry in listed if entry["id"] == key_id)
        assert (entry["max_uses"], entry["uses"], entry["revoked_at"]) == (1, 0, None)
        assert _seconds(entry, "expires_at") == 3600
        assert key not in json.dumps(listed)  # shown once only
        assert "0/1" in _listed_row(gridweave, entry["id"])
        assert "valid" in _listed_row(gridweave, entry["id"])

        join_with(node_registry, key)
        row = _listed_row(gridweave, entry["id"])
        assert "1/1" in row and "used up" in row

        revoked = gridweave("admin", "join-key", "revoke", entry["id"])
        assert revoked.exit_code == 0, revoked.output
        assert f"{entry['id']} revoked at" in revoked.stdout
        assert "revoked" in _listed_row(gridweave, entry["id"])
        again = json_of(gridweave("admin", "join-key", "revoke", entry["id"], "--json"))
        assert again["revoked_at"] is not None  # revoking again changes nothing

    def test_a_revoked_key_joins_no_machine(
        self, gridweave: Invoke, as_admin: PlatformServer, node_registry: Registry
    ) -> None:
        created = json_of(
            gridweave("admin", "join-key", "create", "--uses", "3", "--ttl", "90m", "--json")
        )
        assert created["join_command"].endswith(f"--join-key {created['key']}")
        assert (created["max_uses"], _seconds(created, "expires_at")) == (3, 5400)
        assert gridweave("admin", "join-key", "revoke", created["id"]).exit_code == 0
        answer = validate(node_registry, validate_body(created["key"]))
        assert answer.status_code == 403 and "revoked" in answer.text

    @pytest.mark.parametrize(
        ("ttl", "code", "named"),
        [
            ("soon", ExitCode.USAGE, "--ttl"),
            # under the minute a key lives at least, over its 90 days: refused, not sent
            ("30s", ExitCode.INVALID_REQUEST, "ttl_seconds"),
            ("91d", ExitCode.INVALID_REQUEST, "ttl_seconds"),
        ],
    )
    def test_a_bad_ttl_is_refused_before_anything_is_made(
        self, gridweave: Invoke, as_admin: PlatformServer, ttl: str, code: int, named: str
    ) -> None:
        before = json_of(gridweave("admin", "join-keys", "--json"))["join_keys"]
        result = gridweave("admin", "join-key", "create", "--ttl", ttl)
        assert result.exit_code == code, result.output
        assert named in result.stderr
        assert json_of(gridweave("admin", "join-keys", "--json"))["join_keys"] == before

    def test_an_unknown_key_is_not_found(self, gridweave: Invoke, as_admin: PlatformServer) -> None:
        result = gridweave("admin", "join-key", "revoke", "jk_00ff")
        assert result.exit_code == ExitCode.NOT_FOUND, result.output
        assert "jk_00ff" in result.stderr


class TestNodes:
    def test_cordon_then_uncordon_a_joined_node(
        self, gridweave: Invoke, as_admin: PlatformServer, node_registry: Registry
    ) -> None:
        name = join_with(node_registry, _created_key(gridweave, "--uses", "1")[0])
        assert until_schedulable(as_admin, name, True) == [True, True, True]
        cordoned = gridweave("admin", "cordon", name)
        assert cordoned.exit_code == 0, cordoned.output
        assert f"{name} cordoned" in cordoned.stdout
        assert until_schedulable(as_admin, name, False) == [False, False, False]
        listed = json_of(gridweave("admin", "nodes", "--json"))["nodes"]
        assert next(node for node in listed if node["name"] == name)["cordoned"] is True
        assert _node_row(gridweave, name)[:3] == [name, "Ready", "cordoned"]
        uncordoned = json_of(gridweave("admin", "uncordon", name, "--json"))
        assert (uncordoned["name"], uncordoned["cordoned"]) == (name, False)
        assert until_schedulable(as_admin, name, True) == [True, True, True]
        assert "cordoned" not in _node_row(gridweave, name)

    def test_drain_of_a_free_node_says_it_is_drained(
        self, gridweave: Invoke, as_admin: PlatformServer, node_registry: Registry
    ) -> None:
        name = join_with(node_registry, _created_key(gridweave, "--uses", "1")[0])
        assert until_schedulable(as_admin, name, True) == [True, True, True]
        result = gridweave("admin", "drain", name)
        assert result.exit_code == 0, result.output
        assert f"{name} drained" in result.stdout
        answer = json_of(gridweave("admin", "drain", name, "--json"))
        assert (answer["node"]["cordoned"], answer["held_mb"], answer["drained"]) == (
            True,
            0,
            True,
        )

    def test_drain_wait_follows_a_held_node_until_its_job_ends(
        self,
        gridweave: Invoke,
        as_admin: PlatformServer,
        node_registry: Registry,
        registry_gateway: GatewayServer,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        monkeypatch.setattr(admin_nodes, "DRAIN_POLL_SECONDS", 0.1)
        joined = join_with(node_registry, _created_key(gridweave, "--uses", "1")[0])
        assert until_schedulable(as_admin, joined, True) == [True, True, True]
        internal = {"Authorization": f"Bearer {INTERNAL_TOKEN}"}
        body = submit_body(user_id=as_admin.admin.user_id, vendor="nvidia", vram_mb=2048)
        submitted = registry_gateway.http.post("/v1/jobs", json=body, headers=internal)
        assert submitted.status_code == 201, submitted.text
        job_id = submitted.json()["job_id"]
        try:
            status = registry_gateway.crd.wait_for_job(
                job_id, {JobPhase.ALLOCATED}, timeout=30
            ).status
            assert status.node is not None
            held = gridweave("admin", "drain", status.node)
            assert held.exit_code == 0, held.output
            assert "still held: 2 GiB" in held.stdout
            timed_out = gridweave("admin", "drain", status.node, "--wait", "--timeout", "1s")
            assert timed_out.exit_code == ExitCode.FAILED, timed_out.output
            assert f"{status.node} is not drained after 1 s: 2 GiB still held" in (timed_out.stderr)
        finally:
            cancelled = registry_gateway.http.post(f"/v1/jobs/{job_id}/cancel", headers=internal)
            assert cancelled.status_code == 200, cancelled.text
        waited = gridweave("admin", "drain", status.node, "--wait", "--timeout", "30s", "--json")
        answer = json_of(waited)
        assert (answer["node"]["name"], answer["held_mb"], answer["drained"]) == (
            status.node,
            0,
            True,
        )

    @pytest.mark.parametrize("command", ["cordon", "uncordon", "drain"])
    def test_a_node_not_joined_with_a_key_is_refused_saying_why(
        self,
        gridweave: Invoke,
        monkeypatch: pytest.MonkeyPatch,
        file_platform: PlatformServer,
        command: str,
    ) -> None:
        as_user(monkeypatch, file_platform, file_platform.admin)
        result = gridweave("admin", command, FILE_NODE)
        assert result.exit_code == ExitCode.FAILED, result.output
        assert "not joined with a join key" in result.stderr
        assert "GATEWAY_INVENTORY_SOURCE=local" in result.stderr

    @pytest.mark.parametrize(
        ("node", "code", "message"),
        [
            ("gpu-nowhere", ExitCode.NOT_FOUND, "no node 'gpu-nowhere'"),
            ("Bad_Name", ExitCode.INVALID_REQUEST, "name"),
        ],
    )
    def test_an_unknown_or_malformed_node(
        self, gridweave: Invoke, as_admin: PlatformServer, node: str, code: int, message: str
    ) -> None:
        result = gridweave("admin", "cordon", node)
        assert result.exit_code == code, result.output
        assert message in result.stderr


class TestUsersAndGrants:
    def test_users_lists_every_user_with_the_total(
        self, gridweave: Invoke, as_admin: PlatformServer
    ) -> None:
        user = as_admin.new_user()
        page = json_of(gridweave("admin", "users", "--limit", "500", "--json"))
        assert user.user_id in [entry["user_id"] for entry in page["users"]]
        assert page["total"] == len(page["users"])
        result = gridweave("admin", "users", "--limit", "500")
        assert result.exit_code == 0, result.output
        row = next(line for line in result.stdout.splitlines() if user.user_id in line)
        assert "user" in row.split()
        assert f"of {page['total']}" in result.stderr

    def test_a_grant_repeated_with_its_key_moves_the_balance_once(
        self, gridweave: Invoke, as_admin: PlatformServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        user = as_admin.new_user()
        args = ("admin", "grant", user.user_id, "2.5", "--idempotency-key", "refund-0001")
        first = json_of(gridweave(*args, "--json"))
        assert (first["amount"], first["balance"]) == (2_500_000, 2_500_000)
        again = gridweave(*args)  # a re-run with the same key: the first grant's answer
        assert again.exit_code == 0, again.output
        assert f"granted 2.500000 credits to {user.user_id}: balance 2.500000" in again.stdout
        other = gridweave("admin", "grant", user.user_id, "0.000001")  # a new key drawn
        assert other.exit_code == 0, other.output
        drawn = re.search(r"idempotency key ([0-9a-f]{32})", other.stderr)
        assert drawn is not None and drawn.group(1) != "refund-0001"
        as_user(monkeypatch, as_admin, user)
        assert json_of(gridweave("credits", "--json"))["balance"] == 2_500_001

    @pytest.mark.parametrize(
        ("args", "code", "named"),
        [
            (("0",), ExitCode.USAGE, "more than 0"),
            (("--", "-1"), ExitCode.USAGE, "expected credits"),
            (("2.5000001",), ExitCode.USAGE, "six decimals"),
            (("1e3",), ExitCode.USAGE, "expected credits"),
            (("1", "--idempotency-key", "short"), ExitCode.INVALID_REQUEST, "idempotency_key"),
        ],
    )
    def test_a_bad_grant_is_a_usage_error_and_grants_nothing(
        self,
        gridweave: Invoke,
        as_admin: PlatformServer,
        monkeypatch: pytest.MonkeyPatch,
        args: tuple[str, ...],
        code: int,
        named: str,
    ) -> None:
        user = as_admin.new_user()
        result = gridweave("admin", "grant", user.user_id, *args)
        assert result.exit_code == code, result.output
        assert named in result.stderr
        as_user(monkeypatch, as_admin, user)
        assert json_of(gridweave("credits", "--json"))["balance"] == 0


@pytest.mark.parametrize(
    "command",
    [
        ("join-key", "create"),
        ("join-keys",),
        ("join-key", "revoke", "jk_00ff"),
        ("nodes",),
        ("cordon", "gpu-a"),
        ("uncordon", "gpu-a"),
        ("drain", "gpu-a"),
        ("users",),
        ("grant", "usr-0000000000000000", "1"),
    ],
)
def test_a_user_who_is_not_an_admin_gets_the_platforms_refusal(
    gridweave: Invoke,
    monkeypatch: pytest.MonkeyPatch,
    admin_platform: PlatformServer,
    command: tuple[str, ...],
) -> None:
    as_user(monkeypatch, admin_platform, admin_platform.new_user())
    result = gridweave("admin", *command)
    assert result.exit_code == ExitCode.FAILED, result.output
    assert FORBIDDEN in result.stderr


@pytest.mark.parametrize(
    "command",
    [
        ("join-key", "create"),
        ("join-key", "revoke"),
        ("join-keys",),
        ("nodes",),
        ("cordon",),
        ("uncordon",),
        ("drain",),
        ("users",),
        ("grant",),
    ],
)
def test_each_command_has_help_with_examples_and_json(
    gridweave: Invoke, command: tuple[str, ...]
) -> None:
    result = gridweave("admin", *command, "--help")
    assert result.exit_code == 0, result.output
    assert "Examples:" in result.stdout and "--json" in result.stdout
    assert f"gridweave admin {' '.join(command)}" in result.stdout
