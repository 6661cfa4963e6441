"""``pokdeng-shuffle-v1`` (docs/shuffle.md) for many shoes at once, byte for byte the reference's order.

The reference (``pokdeng_core.shuffle.deck_order_indices``) reads the HMAC stream word by word and swaps in
a Python loop. Here, for a batch of shoes of one size N:

1. each shoe's stream blocks ``0 .. ceil((N - 1) / 8) - 1`` are computed in two calls into OpenSSL (block 0
   an HMAC, the others one PBKDF2 with one iteration: ``shoe_stream``) and read as big-endian 32-bit words;
2. if no word ``k`` (``k = 0 .. N - 2``) reaches the rejection limit of step ``k`` (``n = N - k``,
   section 5), the shuffle reads exactly words ``0 .. N - 2``, one per step, and draw ``k`` is
   ``word[k] mod n``: all draws of all shoes are one numpy expression;
3. the swaps of section 6 run step by step, each step one vectorised swap across the batch;
4. a shoe that has a word at or above its limit (an eight-deck shoe about once in 100,000) is shuffled
   by the reference instead, so rejection and the words after it are exactly the reference's.

Tests run this over the published vectors and over random seeds against the reference.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from pokdeng_core.shuffle import SHUFFLE_ALGORITHM, deck_order_indices

__all__ = ("blocks_for", "order_matrix", "shoe_stream", "stream_prefix")

_TAG = SHUFFLE_ALGORITHM.encode("ascii") + b"\x00"
_COUNTER_0 = bytes(4)
_SHA256 = "sha256"
_hmac_digest = hmac.digest
_pbkdf2 = hashlib.pbkdf2_hmac
_WORD_SPACE = 2**32

OrderMatrix = npt.NDArray[np.int16]


def blocks_for(size: int) -> int:
    """The stream blocks a shuffle of ``size`` cards reads when nothing is rejected (8 words a block)."""
    return (size - 1 + 7) // 8


def stream_prefix(client_seed: str, nonce: int) -> bytes:
    """The HMAC message of docs/shuffle.md section 4 without its 4-byte block counter."""
    seed = client_seed.encode("utf-8")
    return _TAG + len(seed).to_bytes(2, "big") + seed + nonce.to_bytes(8, "big")


def shoe_stream(server_seed: bytes, prefix: bytes, blocks: int) -> bytes:
    """Blocks ``0 .. blocks - 1`` of one shoe's stream, concatenated: HMAC-SHA256(server_seed, prefix || block
    as u32 BE).

    Block 0 is one HMAC. Blocks 1, 2, ... are PBKDF2-HMAC-SHA256 (RFC 8018) with one iteration: its output
    block ``T_i`` is ``HMAC(password, salt || INT(i))``, ``INT(i)`` the 4-byte big-endian ``i`` from 1, which
    with password = the server seed and salt = ``prefix`` is the stream's block ``i``: one call into OpenSSL
    for the whole shoe."""
    first = hmac.digest(server_seed, prefix + _COUNTER_0, "sha256")
    if blocks <= 1:
        return first[: 32 * blocks]
    return first + hashlib.pbkdf2_hmac("sha256", server_seed, prefix, 1, 32 * (blocks - 1))


def order_matrix(
    server_seeds: Sequence[bytes],
    client_seed: str,
    nonces: Sequence[int],
    decks: int,
    rejected: list[int] | None = None,
) -> OrderMatrix:
    """The shuffled shoes as indices into ``canonical_deck(decks)``, one column per shoe.

    Returns an ``int16`` array of shape ``(52 * decks, len(server_seeds))``: column ``s`` is
    ``deck_order_indices(server_seeds[s], client_seed, nonces[s], decks)``, row 0 the first card dealt.
    Inputs are trusted (the report builds them): use the reference for anything a user typed. The columns
    of the shoes whose stream had a word to reject (shuffled by the reference) are appended to ``rejected``.
    """
    shoes = len(server_seeds)
    size = 52 * decks
    if shoes == 0:
        return np.zeros((size, 0), dtype=np.int16)
    blocks = blocks_for(size)
    head = stream_prefix(client_seed, 0)[:-8]  # (the message up to the nonce: the same for every shoe)
    rest = 32 * (blocks - 1)
    data = bytearray()
    for seed, nonce in zip(server_seeds, nonces, strict=True):  # shoe_stream, inlined: a call less per shoe
        prefix = head + nonce.to_bytes(8, "big")
        data += _hmac_digest(seed, prefix + _COUNTER_0, "sha256")
        if rest:
            data += _pbkdf2(_SHA256, seed, prefix, 1, rest)
    words = np.frombuffer(bytes(data), dtype=">u4").reshape(shoes, blocks * 8)[:, : size - 1]
    words_t = np.ascontiguousarray(words.T).astype(np.uint32)  # (steps, shoes), native order
    n = np.arange(size, 1, -1, dtype=np.uint64)  # step k draws uniform(n = size - k)
    highest = (_WORD_SPACE - _WORD_SPACE % n - 1).astype(np.uint32)[:, None]  # the last accepted word
    rejects = np.flatnonzero((words_t > highest).any(axis=0)).tolist()
    draws = (words_t % n.astype(np.uint32)[:, None]).astype(np.intp)  # (steps, shoes)
    cells = draws * shoes + np.arange(shoes, dtype=np.intp)  # step k's j of each shoe, as an index of ``flat``
    order = np.repeat(np.arange(size, dtype=np.int16)[:, None], shoes, axis=1)
    flat = order.reshape(-1)
    for k in range(size - 1):
        i = size - 1 - k
        drawn = flat.take(cells[k])
        flat[cells[k]] = order[i]
        order[i] = drawn
    for s in rejects:  # a rejected word: the reference reads on past it
        order[:, s] = deck_order_indices(server_seeds[s], client_seed, nonces[s], decks)
    if rejected is not None:
        rejected.extend(rejects)
    return order
