"""AcceptedKeys: a key accepted a moment ago is accepted from memory, and forgotten when revoked."""

from __future__ import annotations

import time

from platform_service.models import Role
from platform_service.services.accepted_keys import AcceptedKeys
from platform_service.services.keys import AuthenticatedUser

ALICE = AuthenticatedUser(user_id="usr-alice", role=Role.USER, key_id="aaaaaaaaaaaa")
BOB = AuthenticatedUser(user_id="usr-bob", role=Role.USER, key_id="bbbbbbbbbbbb")


def test_an_accepted_key_is_found_until_it_expires() -> None:
    accepted = AcceptedKeys(seconds=0.2)
    accepted.put("gw_live_alice", ALICE)
    assert accepted.get("gw_live_alice") == ALICE
    assert accepted.get("gw_live_alice_but_longer") is None
    time.sleep(0.25)
    assert accepted.get("gw_live_alice") is None


def test_a_revoked_key_is_forgotten_and_never_remembered_again() -> None:
    accepted = AcceptedKeys(seconds=60)
    accepted.put("gw_live_alice", ALICE)
    accepted.put("gw_live_bob", BOB)
    assert ALICE.key_id is not None
    accepted.forget(ALICE.key_id)
    assert accepted.get("gw_live_alice") is None
    accepted.put("gw_live_alice", ALICE)  # a check that read the key before the revocation
    assert accepted.get("gw_live_alice") is None
    assert accepted.get("gw_live_bob") == BOB


def test_zero_seconds_keeps_nothing_and_the_capacity_is_kept() -> None:
    off = AcceptedKeys(seconds=0)
    off.put("gw_live_alice", ALICE)
    assert off.get("gw_live_alice") is None
    small = AcceptedKeys(seconds=60, capacity=2)
    for name in ("one", "two", "three"):
        small.put(name, ALICE)
    assert [small.get(name) for name in ("one", "two", "three")] == [None, ALICE, ALICE]
