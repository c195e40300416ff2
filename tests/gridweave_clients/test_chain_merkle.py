"""Merkle trees: RFC 6962's shape (checked against its recursive definition) and its paths."""

from __future__ import annotations

import hashlib

import pytest

from gridweave_clients.chain.merkle import inclusion_path, leaf_hash, merkle_root, root_from_path


def _rfc6962_root(leaves: list[bytes]) -> bytes:
    """MTH as RFC 6962 section 2.1 writes it: split at the largest power of two below n."""
    if len(leaves) == 1:
        return hashlib.sha256(b"\x00" + leaves[0]).digest()
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    left, right = _rfc6962_root(leaves[:k]), _rfc6962_root(leaves[k:])
    return hashlib.sha256(b"\x01" + left + right).digest()


def _leaves(count: int) -> list[bytes]:
    return [hashlib.sha256(str(i).encode()).digest() for i in range(count)]


@pytest.mark.parametrize("size", [*range(1, 18), 31, 32, 33, 100])
def test_every_leaf_proves_its_inclusion_and_no_other_index(size: int) -> None:
    leaves = _leaves(size)
    root = merkle_root(leaves)

    assert root == _rfc6962_root(leaves)
    for index in range(size):
        path = inclusion_path(leaves, index)
        assert root_from_path(leaves[index], index, size, path) == root
        if size > 1:
            other = (index + 1) % size
            assert root_from_path(leaves[index], other, size, path) != root


def test_a_changed_leaf_or_path_leads_elsewhere() -> None:
    leaves = _leaves(7)
    root = merkle_root(leaves)
    path = inclusion_path(leaves, 4)
    changed = [bytes(32)] + path[1:]

    assert root_from_path(bytes(32), 4, 7, path) != root
    assert root_from_path(leaves[4], 4, 7, changed) != root
    assert root_from_path(leaves[4], 4, 7, path[:-1]) is None  # too short for 7 leaves
    assert root_from_path(leaves[4], 4, 7, [*path, bytes(32)]) is None  # too long
    assert root_from_path(leaves[4], 7, 7, path) is None


def test_one_leaf_is_its_own_leaf_hash_and_none_is_refused() -> None:
    assert merkle_root([b"x" * 32]) == leaf_hash(b"x" * 32)
    with pytest.raises(ValueError):
        merkle_root([])
