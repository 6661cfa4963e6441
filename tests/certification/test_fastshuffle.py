"""The fast shuffle of the RNG report gives the reference's order, byte for byte (docs/shuffle.md).

Over the published vectors (tests/core/shuffle_vectors.json, among them an eight-deck shoe that rejects a
word) and over random server seeds, client seeds, nonces and deck counts, against
``pokdeng_core.shuffle.deck_order_indices``; and the schedule's streams are the documented HMAC blocks.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import random
from pathlib import Path
from typing import Any

import pytest

from pokdeng_core.shuffle import ShuffleStream, deck_order_indices
from pokdeng_service.certification import schedule
from pokdeng_service.certification.battery import stream_bytes
from pokdeng_service.certification.fastshuffle import blocks_for, order_matrix, shoe_stream, stream_prefix
from pokdeng_service.certification.tallies import scheduled_orders

VECTORS: list[dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parents[1] / "core" / "shuffle_vectors.json").read_text(encoding="utf-8")
)["vectors"]


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_each_published_vector(vector: dict[str, Any]) -> None:
    seed = bytes.fromhex(vector["server_seed_hex"])
    rejected: list[int] = []
    orders = order_matrix([seed], vector["client_seed"], [vector["nonce"]], vector["decks"], rejected)
    assert orders[:, 0].tolist() == vector["indices"]
    assert rejected == ([0] if vector["name"] == "rejection-step" else [])


def test_the_vectors_in_one_batch() -> None:
    """Shoes of one deck count in one batch, a rejecting shoe among them."""
    for decks in (1, 8):
        chosen = [v for v in VECTORS if v["decks"] == decks]
        seeds = [bytes.fromhex(v["server_seed_hex"]) for v in chosen]
        # (one client seed per batch: each vector's own seed, its shoe checked in its column)
        for v in chosen:
            orders = order_matrix(seeds, v["client_seed"], [v["nonce"]] * len(seeds), decks)
            column = seeds.index(bytes.fromhex(v["server_seed_hex"]))
            assert orders[:, column].tolist() == v["indices"]


@pytest.mark.parametrize("decks", [1, 2, 8])
def test_random_inputs_against_the_reference(decks: int) -> None:
    rng = random.Random(decks)
    client = rng.choice(["", "x", "ป๊อกเด้ง ♠", "a\x00b", "c" * 200])
    seeds = [rng.randbytes(rng.choice([16, 32, 64, 65, 100])) for _ in range(150)]
    nonces = [rng.choice([0, 2**64 - 1, rng.randrange(2**64)]) for _ in seeds]
    orders = order_matrix(seeds, client, nonces, decks)
    assert orders.shape == (52 * decks, len(seeds))
    for k, (seed, nonce) in enumerate(zip(seeds, nonces, strict=True)):
        assert tuple(orders[:, k].tolist()) == deck_order_indices(seed, client, nonce, decks)


def test_the_rejection_path_on_found_shoes() -> None:
    """Schedule shoes that hit a rejection (found by the fast path) agree with the reference too."""
    rejected: list[int] = []
    orders = scheduled_orders("abc", 8, 16_000, 1_000, rejected)
    assert rejected == [16_376]  # (about one eight-deck shoe in 105,000 rejects a word)
    for shoe in (16_375, 16_376, 16_377):
        seed = schedule.server_seed("abc", shoe)
        expected = deck_order_indices(seed, schedule.client_seed(8), shoe, 8)
        assert tuple(orders[:, shoe - 16_000].tolist()) == expected


def test_the_stream_is_hmac_sha256_of_the_documented_message() -> None:
    rng = random.Random(5)
    for key_length in (16, 32, 64, 65, 200):
        key = rng.randbytes(key_length)
        prefix = stream_prefix("alice", 9)
        stream = ShuffleStream(key, "alice", 9)
        for blocks in (1, 2, 3, 52):
            data = shoe_stream(key, prefix, blocks)
            assert data == b"".join(hmac.digest(key, prefix + i.to_bytes(4, "big"), "sha256") for i in range(blocks))
            assert data == b"".join(stream.block(i) for i in range(blocks))
    assert blocks_for(52) == 7 and blocks_for(416) == 52


def test_the_schedule() -> None:
    assert schedule.server_seed("s", 3) == hashlib.sha256(b"s" + (3).to_bytes(8, "big")).digest()
    assert schedule.server_seeds("s", 2, 3) == [schedule.server_seed("s", i) for i in (2, 3, 4)]
    assert schedule.client_seed(8) == "pokdeng-certification/8-deck"
    rejected: list[int] = []
    orders = scheduled_orders("s", 1, 4, 6, rejected)
    for k in range(6):
        expected = deck_order_indices(schedule.server_seed("s", 4 + k), "pokdeng-certification/1-deck", 4 + k, 1)
        assert tuple(orders[:, k].tolist()) == expected
    # the battery's stream: blocks 0 .. 51 of each eight-deck shoe's stream, shoe after shoe
    data = stream_bytes("s", 5, 2)
    assert len(data) == 2 * 52 * 32
    for k in range(2):
        stream = ShuffleStream(schedule.server_seed("s", 5 + k), "pokdeng-certification/8-deck", 5 + k)
        assert data[k * 1664 : (k + 1) * 1664] == b"".join(stream.block(i) for i in range(52))
