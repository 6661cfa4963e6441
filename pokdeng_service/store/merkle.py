"""Merkle trees over closed rounds (RFC 6962 shape), for checkpoints and inclusion proofs.

A leaf is ``SHA-256(0x00 ‖ round id ‖ 0x00 ‖ the round's last chain digest)``; an inner
node is ``SHA-256(0x01 ‖ left ‖ right)``. A tree of n leaves splits at the largest power
of two below n, as in RFC 6962, so no leaf is duplicated. An inclusion proof is the list
of sibling hashes from the leaf up to the root.

The store's log of closed rounds (``store/roundlog.py``, docs/checkpoints.md) uses the same
tree with RFC 9162 proofs: ``inclusion_proof`` is PATH(m, D[n]) (section 2.1.3.1),
``consistency_proof`` is PROOF(m, D[n]) (section 2.1.4.1, for 0 < m <= n) and ``verify_consistency``
the verification of section 2.1.4.2; ``verify_inclusion`` is that of section 2.1.3.2. Both verifiers
are tested against transparency-dev/merkle's published probes (tests/service/test_merkle_probes.py).
A *frontier* (``frontier_append``, ``frontier_root``) is the roots of the perfect subtrees a tree of
n leaves is made of, largest first (one per set bit of n): the log keeps it so that its current root
costs O(log n), not a pass over every leaf.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

HASH_SIZE = 32
"""Every hash of the tree (leaf, node, root) is a SHA-256 digest: 32 bytes."""


def leaf_hash(round_id: str, digest: str) -> bytes:
    return hashlib.sha256(b"\x00" + round_id.encode() + b"\x00" + bytes.fromhex(digest)).digest()


def _node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def root(leaves: Sequence[bytes]) -> bytes:
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = _split(len(leaves))
    return _node(root(leaves[:k]), root(leaves[k:]))


def inclusion_proof(leaves: Sequence[bytes], index: int) -> list[bytes]:
    """Sibling hashes from leaf ``index`` up to the root."""
    if not 0 <= index < len(leaves):
        raise IndexError(index)
    if len(leaves) == 1:
        return []
    k = _split(len(leaves))
    if index < k:
        return [*inclusion_proof(leaves[:k], index), root(leaves[k:])]
    return [*inclusion_proof(leaves[k:], index - k), root(leaves[:k])]


def verify_inclusion(leaf: bytes, index: int, size: int, proof: Sequence[bytes], expected_root: bytes) -> bool:
    """Recompute the root from a leaf and its proof (RFC 9162 section 2.1.3.2): 0 <= index < size, and the leaf,
    the root and every hash of the proof 32 bytes (a hash of another length is refused, never hashed)."""
    if not 0 <= index < size or len(leaf) != HASH_SIZE or len(expected_root) != HASH_SIZE:
        return False
    if any(len(node) != HASH_SIZE for node in proof):
        return False
    computed = _climb(leaf, index, size, list(proof))
    return computed is not None and computed == expected_root


def _climb(leaf: bytes, index: int, size: int, proof: list[bytes]) -> bytes | None:
    if size == 1:
        return leaf if not proof else None
    if not proof:
        return None
    k = _split(size)
    sibling = proof[-1]
    if index < k:
        sub = _climb(leaf, index, k, proof[:-1])
        return None if sub is None else _node(sub, sibling)
    sub = _climb(leaf, index - k, size - k, proof[:-1])
    return None if sub is None else _node(sibling, sub)


EMPTY_ROOT = hashlib.sha256(b"").digest()
"""The root of the empty tree: MTH({}) = SHA-256() (RFC 9162 section 2.1.1)."""


def frontier_append(size: int, frontier: Sequence[bytes], leaf: bytes) -> list[bytes]:
    """The frontier of a tree of ``size + 1`` leaves from that of ``size`` leaves and the new leaf."""
    out = list(frontier)
    node = leaf
    n = size
    while n & 1:  # each trailing set bit: a perfect subtree of that height is completed
        node = _node(out.pop(), node)
        n >>= 1
    out.append(node)
    return out


def frontier_root(frontier: Sequence[bytes]) -> bytes:
    """MTH of the tree whose frontier this is: the subtrees joined from the right (smallest first)."""
    if not frontier:
        return EMPTY_ROOT
    node = frontier[-1]
    for left in reversed(frontier[:-1]):
        node = _node(left, node)
    return node


def consistency_proof(leaves: Sequence[bytes], old_size: int) -> list[bytes]:
    """PROOF(m, D[n]) of RFC 9162 section 2.1.4.1, for m = ``old_size`` and n = ``len(leaves)``: 0 < m <= n.

    Empty when m = n (a tree is consistent with itself). From the empty tree (m = 0) there is no proof: the
    RFC defines none, and a verifier refuses one (``verify_consistency``); ``ValueError``.
    """
    if not 0 <= old_size <= len(leaves):
        raise IndexError(old_size)
    if old_size == 0:
        raise ValueError("no consistency proof from the empty tree (RFC 9162 section 2.1.4: 0 < m <= n)")
    if old_size == len(leaves):
        return []
    return _subproof(old_size, leaves, True)


def _subproof(m: int, leaves: Sequence[bytes], complete: bool) -> list[bytes]:
    n = len(leaves)
    if m == n:
        return [] if complete else [root(leaves)]
    k = _split(n)
    if m <= k:
        return [*_subproof(m, leaves[:k], complete), root(leaves[k:])]
    return [*_subproof(m - k, leaves[k:], False), root(leaves[:k])]


def verify_consistency(old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]) -> bool:
    """Whether ``proof`` shows the tree of ``new_size`` leaves extends the one of ``old_size`` (RFC 9162 2.1.4.2).

    The sizes must be 0 < ``old_size`` <= ``new_size``: from the empty tree there is nothing to prove, and a
    "proof" of it is refused (as transparency-dev/merkle's ``VerifyConsistency`` refuses it). Equal sizes need an
    empty proof and equal roots. Otherwise the roots and every hash of the proof must be 32 bytes.
    """
    if not 0 < old_size <= new_size:
        return False
    if old_size == new_size:
        return not proof and old_root == new_root
    if len(old_root) != HASH_SIZE or len(new_root) != HASH_SIZE or any(len(node) != HASH_SIZE for node in proof):
        return False
    path = list(proof)
    if not path:
        return False
    if old_size & (old_size - 1) == 0:  # an exact power of 2: the old root is the first node of the path
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = _node(c, fr)
            sr = _node(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = _node(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == old_root and sr == new_root
