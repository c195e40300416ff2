"""Merkle trees over receipt hashes, as RFC 6962 / RFC 9162 (Certificate Transparency) draws them.

- Leaf: ``SHA-256(0x00 || leaf)``, where the leaf is the receipt hash's 32 bytes.
- Node: ``SHA-256(0x01 || left || right)``.
- Shape (the odd-node rule): the tree of n > 1 leaves is the tree of the first k leaves,
  k the largest power of two below n, on the left and the tree of the remaining n - k on
  the right. A node without a sibling is never duplicated: it moves up unchanged.
- The root of one leaf is its leaf hash; a batch never has zero leaves.
- An inclusion path lists the sibling hashes from the leaf up; it is checked with RFC 9162
  section 2.1.3.2's algorithm (the leaf's index and the tree size give each side).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

__all__ = ["inclusion_path", "leaf_hash", "merkle_root", "root_from_path"]


def leaf_hash(leaf: bytes) -> bytes:
    """The hash of one leaf (prefix 0x00)."""
    return hashlib.sha256(b"\x00" + leaf).digest()


def _node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(size: int) -> int:
    """The largest power of two below ``size`` (size > 1)."""
    return 1 << ((size - 1).bit_length() - 1)


def _subtree_root(leaves: Sequence[bytes]) -> bytes:
    # Built bottom-up level by level: the RFC's recursive split gives the same tree, since
    # pairing left to right and carrying a lone last node up is exactly that split.
    level = [leaf_hash(leaf) for leaf in leaves]
    while len(level) > 1:
        paired = [_node_hash(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            paired.append(level[-1])
        level = paired
    return level[0]


def merkle_root(leaves: Sequence[bytes]) -> bytes:
    """The root of the tree over ``leaves`` (at least one)."""
    if not leaves:
        raise ValueError("a Merkle tree needs at least one leaf")
    return _subtree_root(leaves)


def inclusion_path(leaves: Sequence[bytes], index: int) -> list[bytes]:
    """The sibling hashes from leaf ``index`` up to the root (RFC 6962 PATH)."""
    if not 0 <= index < len(leaves):
        raise ValueError(f"leaf index {index} outside a tree of {len(leaves)}")
    path: list[bytes] = []
    start, end = 0, len(leaves)
    siblings: list[bytes] = []
    while end - start > 1:
        k = _split(end - start)
        if index < start + k:
            siblings.append(_subtree_root(leaves[start + k : end]))
            end = start + k
        else:
            siblings.append(_subtree_root(leaves[start : start + k]))
            start += k
    path.extend(reversed(siblings))
    return path


def root_from_path(leaf: bytes, index: int, size: int, path: Sequence[bytes]) -> bytes | None:
    """The root leaf ``index`` of a ``size``-leaf tree leads to along ``path``, or None.

    None when the path cannot belong to such a tree (too long or too short).
    """
    if not 0 <= index < size:
        return None
    fn, sn = index, size - 1
    result = leaf_hash(leaf)
    for sibling in path:
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            result = _node_hash(sibling, result)
            if not fn & 1:
                while fn & 1 == 0 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            result = _node_hash(result, sibling)
        fn >>= 1
        sn >>= 1
    return result if sn == 0 else None
