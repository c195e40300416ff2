"""The platform clients' admin methods (join keys, nodes, users, grants) against the real
platform over the real node registry, a gateway reading it, and credit_service; and the
operations' own rules (amounts in credits, the grant's idempotency key)."""

from __future__ import annotations

import asyncio
import re

import pytest

from gridweave_clients import Conflict, Forbidden, NotFound
from gridweave_clients.platform import AsyncPlatformClient, PlatformClient
from gridweave_clients.platform.admin import grant_credits, parse_credits
from tests.kuberay_service.node_factories import Registry
from tests.platform_service.admin_stack import (
    FILE_NODE,
    MASTER,
    join_with,
)
from tests.platform_service.factories import PlatformServer, User


def _client(platform: PlatformServer, user: User) -> PlatformClient:
    return PlatformClient(platform.url, user.key, timeout=30)


class TestParseCredits:
    @pytest.mark.parametrize(
        ("text", "micro_credits"),
        [
            ("2.5", 2_500_000),
            ("0.000001", 1),
            ("1,000", 1_000_000_000),
            ("1_234_567.891011", 1_234_567_891_011),
            (" 10 ", 10_000_000),
            ("0.1", 100_000),
        ],
    )
    def test_credits_become_exact_micro_credits(self, text: str, micro_credits: int) -> None:
        assert parse_credits(text) == micro_credits

    @pytest.mark.parametrize(
        "text", ["0", "0.0000001", "-1", "1e3", "abc", "", "1.", ".5", "1000000001"]
    )
    def test_anything_else_is_refused(self, text: str) -> None:
        with pytest.raises(ValueError):
            parse_credits(text)


class TestGrantOperation:
    def test_without_a_key_each_operation_draws_its_own_and_keeps_it_for_retries(self) -> None:
        first, second = grant_credits("usr-1", 5), grant_credits("usr-1", 5)
        keys = [op.call.headers["Idempotency-Key"] for op in (first, second) if op.call.headers]
        assert len(keys) == 2 and keys[0] != keys[1]
        assert all(re.fullmatch(r"[0-9a-f]{32}", key) for key in keys)
        assert first.call.replayable  # a lost answer is sent again with the same key

    def test_a_given_key_is_sent_as_is(self) -> None:
        operation = grant_credits("usr-1", 5, idempotency_key="refund-0001")
        assert operation.call.headers == {"Idempotency-Key": "refund-0001"}


@pytest.mark.postgres
class TestJoinKeysAndNodes:
    def test_async_client_creates_uses_and_revokes_a_key_and_cordons_the_node(
        self, admin_platform: PlatformServer, node_registry: Registry
    ) -> None:
        async def scenario() -> None:
            async with AsyncPlatformClient(
                admin_platform.url, admin_platform.admin.key, timeout=30
            ) as client:
                created = await client.create_join_key(ttl_seconds=3600, max_uses=2)
                assert created.join_command == (
                    f"sudo deploy/join-node.sh --master {MASTER} --join-key {created.key}"
                )
                name = await asyncio.to_thread(join_with, node_registry, created.key)
                listed = await client.list_join_keys()
                entry = next(key for key in listed.join_keys if key.id == created.id)
                assert (entry.uses, entry.max_uses, entry.revoked_at) == (1, 2, None)
                revoked = await client.revoke_join_key(created.id)
                assert revoked.revoked_at is not None
                assert (await client.cordon_node(name)).cordoned is True
                joined = await client.list_joined_nodes()
                assert next(node for node in joined.nodes if node.name == name).cordoned
                assert (await client.uncordon_node(name)).cordoned is False
                drained = await client.drain_node(name)
                assert (drained.node.cordoned, drained.held_mb, drained.drained) == (
                    True,
                    0,
                    True,
                )

        asyncio.run(scenario())

    def test_refusals_carry_the_platforms_code_and_message(
        self, admin_platform: PlatformServer, file_platform: PlatformServer
    ) -> None:
        with _client(admin_platform, admin_platform.new_user()) as client:
            with pytest.raises(Forbidden, match="this route is for admins"):
                client.list_join_keys()
        with _client(admin_platform, admin_platform.admin) as client:
            with pytest.raises(NotFound, match="no node 'gpu-nowhere'"):
                client.drain_node("gpu-nowhere")
        with _client(file_platform, file_platform.admin) as client:
            with pytest.raises(Conflict, match="not joined with a join key") as refused:
                client.cordon_node(FILE_NODE)
        assert refused.value.code == "node_not_joined"


@pytest.mark.postgres
class TestUsersAndGrants:
    def test_a_grant_is_made_once_per_key(self, admin_platform: PlatformServer) -> None:
        user = admin_platform.new_user()
        with _client(admin_platform, admin_platform.admin) as admin:
            page = admin.list_users(limit=500)
            assert user.user_id in [listed.user_id for listed in page.users]
            first = admin.grant_credits(user.user_id, 1_500_000, idempotency_key="grant-key-01")
            again = admin.grant_credits(user.user_id, 1_500_000, idempotency_key="grant-key-01")
            assert first == again
            assert (first.amount, first.balance, first.idempotency_key) == (
                1_500_000,
                1_500_000,
                "grant-key-01",
            )
            with pytest.raises(Conflict):  # the same key for another amount
                admin.grant_credits(user.user_id, 7, idempotency_key="grant-key-01")
            # without a key each call is a grant of its own: calling again grants again
            admin.grant_credits(user.user_id, 1)
            admin.grant_credits(user.user_id, 1)
        with _client(admin_platform, user) as own:
            assert own.get_credits().balance == 1_500_002
