"""Merkle trees over closed rounds (RFC 6962 shape), for checkpoints and inclusion proofs.

A leaf is ``SHA-256(0x00 ‖ round id ‖ 0x00 ‖ the round's last chain digest)``; an inner
node is ``SHA-256(0x01 ‖ left ‖ right)``. A tree of n leaves splits at the largest power
of two below n, as in RFC 6962, so no leaf is duplicated. An inclusion proof is the list
of sibling hashes from the leaf up to the root.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence


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
    """Recompute the root from a leaf and its proof (RFC 6962 section 2.1.1)."""
    if not 0 <= index < size:
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
