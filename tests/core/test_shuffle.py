"""Tests for the provably-fair seeded shuffle (pokdeng_core/shuffle.py, docs/shuffle.md)."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import re
import struct
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pokdeng_core.cards import canonical_deck, parse_cards
from pokdeng_core.shuffle import (
    CLIENT_SEED_MAX_CHARS,
    MAX_DECKS,
    NONCE_MAX,
    SHUFFLE_ALGORITHM,
    ShuffleError,
    ShuffleStream,
    commitment,
    deck_order_indices,
    hmac_message,
    order_digest,
    order_text,
    seeded_shuffle,
    shuffled_deck,
    uniform_below,
    verify_commitment,
)

VECTORS_PATH = Path(__file__).with_name("shuffle_vectors.json")
DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "shuffle.md"

VECTORS: list[dict[str, Any]] = json.loads(VECTORS_PATH.read_text(encoding="utf-8"))["vectors"]
DOC = DOC_PATH.read_text(encoding="utf-8")

SEED = bytes(range(32))


def _vector_id(vector: dict[str, Any]) -> str:
    return str(vector["name"])


# --------------------------------------------------------------------------- helpers: the doc


def _reference() -> dict[str, Any]:
    """Execute the ```python reference block of docs/shuffle.md and return its namespace."""
    blocks = re.findall(r"^```python reference\n(.*?)^```$", DOC, flags=re.DOTALL | re.MULTILINE)
    assert len(blocks) == 1, "docs/shuffle.md must contain exactly one ```python reference block"
    namespace: dict[str, Any] = {"__name__": "shuffle_reference"}
    exec(compile(blocks[0], str(DOC_PATH), "exec"), namespace)
    return namespace


REFERENCE = _reference()


def _doc_vectors() -> list[dict[str, Any]]:
    """Parse the ```vector blocks of docs/shuffle.md."""
    parsed = []
    for block in re.findall(r"^```vector\n(.*?)^```$", DOC, flags=re.DOTALL | re.MULTILINE):
        fields: dict[str, Any] = {}
        order_key = None
        order_cards: list[str] = []
        for line in block.splitlines():
            if line.startswith("  "):
                assert order_key is not None, f"card line outside an order field: {line!r}"
                order_cards.extend(line.split())
                continue
            key, _, value = line.partition(":")
            value = value.strip()
            if key in ("order", "order_first_52"):
                order_key = key
                assert value == ""
            elif key == "client_seed":
                fields[key] = json.loads(value)
            elif key in ("nonce", "decks"):
                fields[key] = int(value)
            elif key == "client_seed_utf8_hex":
                fields[key] = "" if value == "(empty)" else value
            else:
                fields[key] = value
        assert order_key is not None
        fields[order_key] = " ".join(order_cards)
        parsed.append(fields)
    return parsed


# --------------------------------------------------------------------------- test vectors


def test_vector_file_covers_the_required_cases() -> None:
    assert json.loads(VECTORS_PATH.read_text(encoding="utf-8"))["algorithm"] == SHUFFLE_ALGORITHM
    assert len(VECTORS) >= 4
    assert len({v["name"] for v in VECTORS}) == len(VECTORS)
    assert any(v["client_seed"] == "" for v in VECTORS)
    assert any(not v["client_seed"].isascii() for v in VECTORS)
    assert any(v["nonce"] == 0 for v in VECTORS)
    assert any(v["nonce"] >= 2**63 for v in VECTORS)
    assert any(v["decks"] == 8 for v in VECTORS)
    assert any(len(bytes.fromhex(v["server_seed_hex"])) == 16 for v in VECTORS)


@pytest.mark.parametrize("vector", VECTORS, ids=_vector_id)
def test_module_reproduces_vector(vector: dict[str, Any]) -> None:
    server_seed = bytes.fromhex(vector["server_seed_hex"])
    client_seed, nonce, decks = vector["client_seed"], vector["nonce"], vector["decks"]

    assert client_seed.encode("utf-8").hex() == vector["client_seed_utf8_hex"]
    assert commitment(server_seed) == vector["commitment"]
    assert verify_commitment(server_seed, vector["commitment"])

    cards = shuffled_deck(server_seed, client_seed, nonce, decks)
    assert len(cards) == 52 * decks
    assert order_text(cards) == vector["order"]
    assert order_digest(cards) == vector["order_sha256"]
    assert hashlib.sha256(vector["order"].encode("ascii")).hexdigest() == vector["order_sha256"]
    assert list(deck_order_indices(server_seed, client_seed, nonce, decks)) == vector["indices"]
    assert cards == parse_cards(vector["order"])

    result = seeded_shuffle(server_seed, client_seed, nonce, decks)
    assert result.algorithm == SHUFFLE_ALGORITHM
    assert result.commitment == vector["commitment"]
    assert (result.client_seed, result.nonce, result.decks) == (client_seed, nonce, decks)
    assert result.cards == cards
    assert list(result.indices) == vector["indices"]
    assert result.order_text == vector["order"]
    assert result.order_digest == vector["order_sha256"]


@pytest.mark.parametrize("vector", VECTORS, ids=_vector_id)
def test_doc_reference_reproduces_vector(vector: dict[str, Any]) -> None:
    server_seed = bytes.fromhex(vector["server_seed_hex"])
    assert REFERENCE["commitment"](server_seed) == vector["commitment"]
    order = REFERENCE["shuffle"](server_seed, vector["client_seed"], vector["nonce"], vector["decks"])
    assert " ".join(order) == vector["order"]


def test_doc_vectors_equal_json_vectors() -> None:
    doc_vectors = _doc_vectors()
    assert [v["name"] for v in doc_vectors] == [v["name"] for v in VECTORS]
    for doc, js in zip(doc_vectors, VECTORS, strict=True):
        for key in ("server_seed_hex", "client_seed", "client_seed_utf8_hex", "nonce", "decks", "commitment"):
            assert doc[key] == js[key], (js["name"], key)
        assert doc["order_sha256"] == js["order_sha256"]
        if js["decks"] == 1:
            assert doc["order"] == js["order"]
            assert js["order"] in DOC.replace("\n  ", " ")
        else:
            assert "order" not in doc
            assert doc["order_first_52"].split() == js["order"].split()[:52]


def test_doc_states_the_algorithm_version_and_canonical_order() -> None:
    assert SHUFFLE_ALGORITHM == "pokdeng-shuffle-v1"
    assert f"`{SHUFFLE_ALGORITHM}`" in DOC
    canonical = order_text(canonical_deck())
    for suit in range(4):
        assert " ".join(canonical.split()[13 * suit : 13 * suit + 13]) in DOC
    assert REFERENCE["DECK"] == canonical.split()


# --------------------------------------------------------------------------- module vs reference


@settings(max_examples=150, deadline=None)
@given(
    server_seed=st.binary(min_size=16, max_size=80),
    client_seed=st.text(max_size=CLIENT_SEED_MAX_CHARS),
    nonce=st.integers(min_value=0, max_value=NONCE_MAX),
    decks=st.one_of(st.just(1), st.integers(min_value=1, max_value=8)),
)
def test_doc_reference_matches_module(server_seed: bytes, client_seed: str, nonce: int, decks: int) -> None:
    expected = order_text(shuffled_deck(server_seed, client_seed, nonce, decks))
    assert " ".join(REFERENCE["shuffle"](server_seed, client_seed, nonce, decks)) == expected
    assert REFERENCE["commitment"](server_seed) == commitment(server_seed)


class _FakeWords:
    """A scripted word source that counts what it hands out."""

    def __init__(self, words: list[int]) -> None:
        self._words = iter(words)
        self.read = 0

    def __call__(self) -> int:
        self.read += 1
        return next(self._words)

    def __iter__(self) -> Iterator[int]:
        return self

    def __next__(self) -> int:
        return self()


def _words_with_rejections(count: int) -> list[int]:
    """Pseudo-random words with 0xFFFFFFFF (rejected for every n that is not a power of two) sprinkled in."""
    words = []
    state = 12345
    for k in range(count):
        state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
        words.append(0xFFFFFFFF if k % 7 == 0 else state >> 32)
    return words


def test_module_and_reference_skip_rejected_words_identically(monkeypatch: pytest.MonkeyPatch) -> None:
    words = _words_with_rejections(2000)
    module_source = _FakeWords(words)
    blocks = (tuple(next(module_source) for _ in range(8)) for _ in iter(int, 1))  # eight words a block
    monkeypatch.setattr(ShuffleStream, "word_blocks", lambda self: blocks)
    module_order = order_text(shuffled_deck(SEED, "", 0, 2))
    monkeypatch.undo()

    reference_source = _FakeWords(words)
    # REFERENCE is the global namespace of the doc's functions, so this swaps the stream under shuffle()
    monkeypatch.setitem(REFERENCE, "words", lambda *args: reference_source)
    reference_order = " ".join(REFERENCE["shuffle"](SEED, "", 0, 2))
    monkeypatch.undo()

    assert reference_order == module_order
    # the module reads whole blocks of eight words: at most seven more than it used
    assert reference_source.read <= module_source.read < reference_source.read + 8
    assert reference_source.read > 103  # 103 draws, and some words were rejected
    assert sorted(module_order.split()) == sorted(order_text(canonical_deck(2)).split())


# --------------------------------------------------------------------------- stream and draw


def test_hmac_message_layout() -> None:
    message = hmac_message("a\x00b", 3, 2)
    assert message == (
        b"pokdeng-shuffle-v1" + b"\x00" + b"\x00\x03" + b"a\x00b" + b"\x00" * 7 + b"\x03" + b"\x00\x00\x00\x02"
    )
    assert hmac_message("", 0, 0) == b"pokdeng-shuffle-v1\x00" + bytes(2 + 8 + 4)
    assert len(hmac_message("", 0, 0)) == 33
    thai = "ป๊อก"
    assert hmac_message(thai, NONCE_MAX, 2**32 - 1) == (
        b"pokdeng-shuffle-v1\x00" + len(thai.encode()).to_bytes(2, "big") + thai.encode() + b"\xff" * 12
    )
    # the length prefix keeps field boundaries unambiguous
    assert hmac_message("a\x00", 0, 0) != hmac_message("a", 0, 0)[:-1] + b"\x00\x00\x00\x00\x00"


def test_stream_blocks_are_hmac_sha256_and_words_are_big_endian() -> None:
    stream = ShuffleStream(SEED, "alice", 9)
    expected_words: list[int] = []
    for i in range(3):
        block = hmac.new(SEED, hmac_message("alice", 9, i), hashlib.sha256).digest()
        assert stream.block(i) == block
        expected_words.extend(int.from_bytes(block[k : k + 4], "big") for k in range(0, 32, 4))
    assert list(itertools.islice(stream.words(), 24)) == expected_words
    assert [stream.next_word() for _ in range(24)] == expected_words
    assert stream.words_read == 24
    assert expected_words[:8] == list(struct.unpack(">8I", stream.block(0)))


def test_uniform_below_rejects_words_at_or_above_the_limit() -> None:
    # n = 52: limit = 4294967248, so the top 48 words are rejected
    source = _FakeWords([4294967248, 4294967295, 100])
    assert uniform_below(52, source) == 100 % 52
    assert source.read == 3
    source = _FakeWords([4294967247])
    assert uniform_below(52, source) == 4294967247 % 52 == 51
    assert source.read == 1
    # n = 3: only 0xFFFFFFFF is rejected
    source = _FakeWords([0xFFFFFFFF, 0xFFFFFFFF, 7])
    assert uniform_below(3, source) == 1
    assert source.read == 3
    # n = 2**31 + 1: limit = 2**31 + 1, about half of all words are rejected
    source = _FakeWords([2**31 + 1, 2**32 - 1, 2**31, 5])
    assert uniform_below(2**31 + 1, source) == 2**31
    assert source.read == 3
    # powers of two and n = 1 never reject
    assert uniform_below(1, _FakeWords([0xFFFFFFFF])) == 0
    assert uniform_below(64, _FakeWords([0xFFFFFFFF])) == 63
    assert uniform_below(2**32, _FakeWords([0xFFFFFFFF])) == 0xFFFFFFFF


@pytest.mark.parametrize("n", [0, -1, 2**32 + 1])
def test_uniform_below_rejects_bad_range(n: int) -> None:
    with pytest.raises(ShuffleError, match="n must be"):
        uniform_below(n, _FakeWords([1]))


def test_stream_uniform_rejects_on_the_real_stream() -> None:
    n = 2**31 + 1
    stream = ShuffleStream(SEED, "reject", 1)
    draws = [stream.uniform(n) for _ in range(64)]
    assert stream.draws == 64
    rejected = stream.words_read - stream.draws
    assert rejected > 0

    replay = ShuffleStream(SEED, "reject", 1)
    raw = [replay.next_word() for _ in range(stream.words_read)]
    accepted = [w for w in raw if w < n]
    assert len(raw) - len(accepted) == rejected
    assert draws == [w % n for w in accepted]


# --------------------------------------------------------------------------- properties


@settings(max_examples=100, deadline=None)
@given(
    server_seed=st.binary(min_size=16, max_size=48),
    client_seed=st.text(max_size=40),
    nonce=st.integers(min_value=0, max_value=NONCE_MAX),
    decks=st.integers(min_value=1, max_value=8),
)
def test_every_shuffle_is_a_permutation_of_the_shoe(
    server_seed: bytes, client_seed: str, nonce: int, decks: int
) -> None:
    indices = deck_order_indices(server_seed, client_seed, nonce, decks)
    assert sorted(indices) == list(range(52 * decks))
    cards = shuffled_deck(server_seed, client_seed, nonce, decks)
    assert Counter(cards) == Counter(canonical_deck(decks))
    assert cards == tuple(canonical_deck(decks)[i] for i in indices)
    assert shuffled_deck(server_seed, client_seed, nonce, decks) == cards  # deterministic


def test_different_nonces_client_seeds_and_server_seeds_give_different_orders() -> None:
    by_nonce = {deck_order_indices(SEED, "x", nonce) for nonce in range(300)}
    assert len(by_nonce) == 300
    client_seeds = ["", "\x00", "\x00\x00", "a", "a\x00", "A", "é", "e\u0301", "ป๊อก", " " * 256]
    by_client = {deck_order_indices(SEED, seed, 0) for seed in client_seeds}
    assert len(by_client) == len(client_seeds)
    flipped = bytes([SEED[0] ^ 1]) + SEED[1:]
    assert deck_order_indices(flipped, "", 0) != deck_order_indices(SEED, "", 0)
    assert deck_order_indices(SEED + b"\x01", "", 0) != deck_order_indices(SEED, "", 0)
    assert deck_order_indices(SEED, "", NONCE_MAX) != deck_order_indices(SEED, "", 0)


def test_hmac_key_padding_equivalence_is_caught_by_the_commitment() -> None:
    # HMAC zero-pads short keys, so a seed and the same seed plus trailing zero bytes give the same
    # stream (docs/shuffle.md, security notes). The commitment binds the exact bytes, so a server
    # cannot swap one for the other after committing.
    padded = SEED + b"\x00"
    assert deck_order_indices(padded, "", 0) == deck_order_indices(SEED, "", 0)
    assert commitment(padded) != commitment(SEED)
    assert not verify_commitment(padded, commitment(SEED))


def test_first_card_and_ace_position_look_uniform() -> None:
    trials = 20_000
    first: Counter[int] = Counter()
    ace_position: Counter[int] = Counter()
    for nonce in range(trials):
        order = deck_order_indices(SEED, "uniformity", nonce)
        first[order[0]] += 1
        ace_position[order.index(0)] += 1
    expected = trials / 52  # ~385, standard deviation ~19.4
    for counts in (first, ace_position):
        assert set(counts) == set(range(52))
        assert all(abs(counts[k] - expected) < 6 * 19.4 for k in range(52)), counts


def test_shuffle_moves_cards() -> None:
    cards = shuffled_deck(SEED, "", 0)
    assert cards != canonical_deck()
    assert sum(a == b for a, b in zip(cards, canonical_deck(), strict=True)) < 10


def test_boundary_inputs_are_accepted() -> None:
    shuffled_deck(bytes(16), "", 0)
    shuffled_deck(bytes(1000), "🃏" * CLIENT_SEED_MAX_CHARS, NONCE_MAX)
    assert len(shuffled_deck(SEED, "", 0, MAX_DECKS)) == 52 * MAX_DECKS
    assert shuffled_deck(bytearray(SEED), "", 0) == shuffled_deck(SEED, "", 0)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- commitment


def test_commitment_is_lowercase_sha256_hex() -> None:
    digest = commitment(SEED)
    assert digest == hashlib.sha256(SEED).hexdigest()
    assert re.fullmatch(r"[0-9a-f]{64}", digest)


def test_verify_commitment() -> None:
    digest = commitment(SEED)
    assert verify_commitment(SEED, digest)
    assert verify_commitment(SEED, digest.upper())
    assert verify_commitment(SEED, f" {digest}\n")
    assert not verify_commitment(SEED, commitment(bytes(32)))
    assert not verify_commitment(SEED, digest[:-1])
    assert not verify_commitment(SEED, "")
    assert not verify_commitment(SEED, "é" * 64)
    assert not verify_commitment(SEED, hashlib.sha256(SEED.hex().encode()).hexdigest())


def test_result_does_not_carry_the_server_seed() -> None:
    result = seeded_shuffle(SEED, "c", 1)
    assert SEED.hex() not in repr(result)
    assert not hasattr(result, "server_seed")
    with pytest.raises(AttributeError):
        result.nonce = 2  # type: ignore[misc]


# --------------------------------------------------------------------------- bad inputs


BAD_INPUTS: list[tuple[dict[str, Any], str]] = [
    ({"server_seed": bytes(15)}, "server_seed"),
    ({"server_seed": b""}, "server_seed"),
    ({"server_seed": SEED.hex()}, "server_seed"),
    ({"server_seed": None}, "server_seed"),
    ({"server_seed": list(SEED)}, "server_seed"),
    ({"client_seed": "x" * (CLIENT_SEED_MAX_CHARS + 1)}, "client_seed"),
    ({"client_seed": b"bytes"}, "client_seed"),
    ({"client_seed": None}, "client_seed"),
    ({"client_seed": "lone \ud800 surrogate"}, "client_seed"),
    ({"nonce": -1}, "nonce"),
    ({"nonce": NONCE_MAX + 1}, "nonce"),
    ({"nonce": 1.0}, "nonce"),
    ({"nonce": "1"}, "nonce"),
    ({"nonce": True}, "nonce"),
    ({"decks": 0}, "decks"),
    ({"decks": -8}, "decks"),
    ({"decks": MAX_DECKS + 1}, "decks"),
    ({"decks": 8.0}, "decks"),
    ({"decks": True}, "decks"),
]


@pytest.mark.parametrize("function", [shuffled_deck, deck_order_indices, seeded_shuffle])
@pytest.mark.parametrize(("override", "field"), BAD_INPUTS, ids=[f"{f}-{i}" for i, (_, f) in enumerate(BAD_INPUTS)])
def test_bad_inputs_raise_shuffle_error_naming_the_field(
    function: Callable[..., object], override: dict[str, Any], field: str
) -> None:
    kwargs: dict[str, Any] = {"server_seed": SEED, "client_seed": "c", "nonce": 0, "decks": 1, **override}
    with pytest.raises(ShuffleError, match=field) as excinfo:
        function(**kwargs)
    assert isinstance(excinfo.value, ValueError)


@pytest.mark.parametrize("server_seed", [bytes(15), "00" * 32, None])
def test_commitment_rejects_bad_server_seed(server_seed: Any) -> None:
    with pytest.raises(ShuffleError, match="server_seed"):
        commitment(server_seed)
    with pytest.raises(ShuffleError, match="server_seed"):
        verify_commitment(server_seed, "00" * 32)


def test_stream_and_message_reject_bad_inputs() -> None:
    with pytest.raises(ShuffleError, match="nonce"):
        ShuffleStream(SEED, "", -1)
    with pytest.raises(ShuffleError, match="client_seed"):
        hmac_message("x" * 300, 0, 0)
    with pytest.raises(ShuffleError, match="block"):
        hmac_message("", 0, 2**32)
    with pytest.raises(ShuffleError, match="block"):
        ShuffleStream(SEED, "", 0).block(-1)


@pytest.mark.parametrize("length", [16, 32, 63, 64, 65, 100, 200])
def test_stream_blocks_are_hmac_sha256(length: int) -> None:
    """The stream's keyed-once HMAC states give exactly ``hmac.digest`` for every block,
    whatever the key's length (keys longer than SHA-256's block are hashed first)."""
    import hashlib
    import hmac as std_hmac

    seed = hashlib.sha512(bytes([length])).digest() * 4
    seed = seed[:length]
    stream = ShuffleStream(seed, "client", 7)
    for index, block in zip(range(5), stream.word_blocks(), strict=False):
        expected = std_hmac.digest(seed, hmac_message("client", 7, index), "sha256")
        assert struct.pack(">8I", *block) == expected
        assert stream.block(index) == expected


def test_a_published_vector_hits_the_rejection_step_where_it_says() -> None:
    """``rejection-step`` (docs/shuffle.md section 5): its stream reads a word the uniform draw rejects,
    at the word and index the vector names, and both implementations skip it identically."""
    rejecting = [v for v in VECTORS if v.get("rejections")]
    assert rejecting, "no published vector hits the rejection step"
    for vector in rejecting:
        server_seed = bytes.fromhex(vector["server_seed_hex"])
        client_seed, nonce, decks = vector["client_seed"], vector["nonce"], vector["decks"]
        words = ShuffleStream(server_seed, client_seed, nonce).words()
        found = []
        position = -1
        for i in range(52 * decks - 1, 0, -1):
            n = i + 1
            limit = 2**32 - 2**32 % n
            while True:
                word = next(words)
                position += 1
                if word < limit:
                    break
                found.append({"word": position, "value": word, "i": i, "n": n, "limit": limit})
        expected = [{k: r[k] for k in ("word", "value", "i", "n", "limit")} for r in vector["rejections"]]
        assert found == expected
        stream = ShuffleStream(server_seed, client_seed, nonce)
        for r in vector["rejections"]:
            block = stream.block(r["block"])
            offset = 4 * r["word_in_block"]
            assert r["word"] == 8 * r["block"] + r["word_in_block"]
            assert block[offset : offset + 4].hex() == r["value_hex"] and int(r["value_hex"], 16) == r["value"]
            after = block[offset + 4 : offset + 8] if r["word_in_block"] < 7 else stream.block(r["block"] + 1)[:4]
            assert int.from_bytes(after, "big") == r["next_word"] and r["next_word"] % r["n"] == r["j"]
        counted = ShuffleStream(server_seed, client_seed, nonce)
        for i in range(52 * decks - 1, 0, -1):
            counted.uniform(i + 1)
        assert counted.words_read - counted.draws == len(expected)
        order = REFERENCE["shuffle"](server_seed, client_seed, nonce, decks)
        assert " ".join(order) == vector["order"] == order_text(shuffled_deck(server_seed, client_seed, nonce, decks))
        doc = next(d for d in _doc_vectors() if d["name"] == vector["name"])
        first = vector["rejections"][0]
        assert f"word {first['word']} " in doc["rejected"] and f"i = {first['i']} " in doc["rejected"]
