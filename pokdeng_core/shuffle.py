"""Provably-fair seeded shuffle (docs/shuffle.md is the normative description).

The shoe order is a pure function of three inputs:

* ``server_seed`` - secret bytes chosen by the server (at least 16, 32 typical).
  Its SHA-256 (``commitment``) is published before any card is dealt and the
  seed itself is revealed after the round, so anyone can check the deal.
* ``client_seed`` - a string contributed by the players (UTF-8, 0..256 code points).
* ``nonce`` - the round counter, an unsigned 64-bit integer.

An HMAC-SHA256 counter-mode stream keyed by the server seed is cut into 4-byte
big-endian words; rejection sampling turns the words into unbiased integers that
drive a Fisher-Yates shuffle of the canonical shoe (``cards.canonical_deck``).

This module is pure: no I/O, no clock, no randomness of its own.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pokdeng_core.cards import Card, canonical_deck, format_cards
from pokdeng_core.catalog import SHUFFLE_ALGORITHM  # the version stamp and HMAC domain tag (in catalog: light)
from pokdeng_core.limits import MAX_CLIENT_SEED

__all__ = (
    "CLIENT_SEED_MAX_CHARS",
    "CLIENT_SEED_RULE",
    "MAX_DECKS",
    "MIN_SERVER_SEED_BYTES",
    "NONCE_MAX",
    "PLATFORM",
    "SHUFFLE_ALGORITHM",
    "ShuffleError",
    "ShuffleResult",
    "ShuffleStream",
    "client_seed_message",
    "commitment",
    "deck_order_indices",
    "derive_client_seed",
    "hmac_message",
    "order_digest",
    "order_text",
    "seeded_shuffle",
    "shuffled_deck",
    "uniform_below",
    "verify_commitment",
)

MIN_SERVER_SEED_BYTES = 16
CLIENT_SEED_MAX_CHARS = MAX_CLIENT_SEED  # the one limit, pokdeng_core/limits.py
NONCE_MAX = 2**64 - 1
MAX_DECKS = 64
"""Guard against absurd shoes; the algorithm itself works for any shoe of fewer than 2**32 cards."""

_WORD_SPACE = 2**32
_BLOCK_LIMIT = 2**32  # the block counter is 4 bytes
_TAG = SHUFFLE_ALGORITHM.encode("ascii") + b"\x00"
_WORDS_PER_BLOCK = struct.Struct(">8I")  # a 32-byte block as eight big-endian u32


class ShuffleError(ValueError):
    """Bad input to the seeded shuffle; the message names the offending field."""


# --------------------------------------------------------------------------- validation


def _check_server_seed(server_seed: bytes) -> bytes:
    if isinstance(server_seed, str):
        raise ShuffleError("server_seed must be bytes, not str (use bytes.fromhex() for a hex seed)")
    if not isinstance(server_seed, bytes | bytearray):
        raise ShuffleError(f"server_seed must be bytes, not {type(server_seed).__name__}")
    if len(server_seed) < MIN_SERVER_SEED_BYTES:
        raise ShuffleError(
            f"server_seed must be at least {MIN_SERVER_SEED_BYTES} bytes long (32 recommended), got {len(server_seed)}"
        )
    return bytes(server_seed)


def _check_client_seed(client_seed: str) -> bytes:
    if not isinstance(client_seed, str):
        raise ShuffleError(f"client_seed must be a str, not {type(client_seed).__name__}")
    if len(client_seed) > CLIENT_SEED_MAX_CHARS:
        raise ShuffleError(
            f"client_seed is too long: {len(client_seed)} characters, at most {CLIENT_SEED_MAX_CHARS} allowed"
        )
    try:
        return client_seed.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ShuffleError(f"client_seed cannot be encoded as UTF-8: {exc.reason} at position {exc.start}") from None


def _check_nonce(nonce: int) -> int:
    if isinstance(nonce, bool) or not isinstance(nonce, int):
        raise ShuffleError(f"nonce must be an int, not {type(nonce).__name__}")
    if not 0 <= nonce <= NONCE_MAX:
        raise ShuffleError(f"nonce must be between 0 and 2**64 - 1, got {nonce}")
    return nonce


def _check_decks(decks: int) -> int:
    if isinstance(decks, bool) or not isinstance(decks, int):
        raise ShuffleError(f"decks must be an int, not {type(decks).__name__}")
    if not 1 <= decks <= MAX_DECKS:
        raise ShuffleError(f"decks must be between 1 and {MAX_DECKS}, got {decks}")
    return decks


# --------------------------------------------------------------------------- commitment


def commitment(server_seed: bytes) -> str:
    """The public commitment to a server seed: lowercase hex SHA-256 of its bytes."""
    return hashlib.sha256(_check_server_seed(server_seed)).hexdigest()


def verify_commitment(server_seed: bytes, commitment_hex: str) -> bool:
    """True if ``commitment_hex`` (64 hex digits, any case) is the commitment to ``server_seed``.

    The comparison is constant-time. A malformed commitment string simply does
    not match; a malformed server seed raises ``ShuffleError``.
    """
    expected = commitment(server_seed).encode("ascii")
    if not isinstance(commitment_hex, str):
        raise ShuffleError(f"commitment_hex must be a str, not {type(commitment_hex).__name__}")
    given = commitment_hex.strip().lower().encode("utf-8", "replace")
    return hmac.compare_digest(expected, given)


# --------------------------------------------------------------------------- the stream


def hmac_message(client_seed: str, nonce: int, block: int) -> bytes:
    """The HMAC message for one 32-byte block of the stream (docs/shuffle.md, "The byte stream").

    ``"pokdeng-shuffle-v1" || 0x00 || len(client_seed_utf8) as u16 BE || client_seed_utf8
    || nonce as u64 BE || block as u32 BE``.
    """
    seed_bytes = _check_client_seed(client_seed)
    _check_nonce(nonce)
    if isinstance(block, bool) or not isinstance(block, int) or not 0 <= block < _BLOCK_LIMIT:
        raise ShuffleError(f"block must be an int between 0 and 2**32 - 1, got {block!r}")
    return _prefix(seed_bytes, nonce) + block.to_bytes(4, "big")


def _prefix(client_seed_utf8: bytes, nonce: int) -> bytes:
    return _TAG + len(client_seed_utf8).to_bytes(2, "big") + client_seed_utf8 + nonce.to_bytes(8, "big")


def uniform_below(n: int, next_word: Callable[[], int]) -> int:
    """A uniform integer in ``[0, n)`` from a source of uniform 32-bit words, without bias.

    Words ``>= (2**32 // n) * n`` are rejected (discarded) and the next word is
    read; an accepted word ``w`` gives ``w % n``. ``1 <= n <= 2**32``.
    """
    if not 1 <= n <= _WORD_SPACE:
        raise ShuffleError(f"n must be between 1 and 2**32, got {n}")
    limit = _WORD_SPACE - _WORD_SPACE % n  # == (2**32 // n) * n
    while True:
        word = next_word()
        if word < limit:
            return word % n


def _hmac_sha256_states(key: bytes) -> tuple[Any, Any]:
    """HMAC-SHA256 (RFC 2104) as two SHA-256 states keyed once: ``H(K ^ ipad)`` and ``H(K ^ opad)``.

    ``HMAC(K, m) = H((K ^ opad) || H((K ^ ipad) || m))`` with ``K`` the key padded with zeros
    to SHA-256's 64-byte block (a longer key is hashed first). Copying the two states for
    each block gives exactly ``hmac.digest(key, m, "sha256")`` (the tests check it) at about
    half the cost of keying afresh every time."""
    if len(key) > 64:
        key = hashlib.sha256(key).digest()
    padded = key.ljust(64, b"\x00")
    return hashlib.sha256(padded.translate(_IPAD)), hashlib.sha256(padded.translate(_OPAD))


_IPAD = bytes(b ^ 0x36 for b in range(256))  # byte translation tables: each byte XOR 0x36, XOR 0x5c
_OPAD = bytes(b ^ 0x5C for b in range(256))


class ShuffleStream:
    """The HMAC-SHA256 counter-mode word stream for one (server_seed, client_seed, nonce).

    ``words()`` iterates over the stream's 4-byte big-endian words from the start.
    ``next_word()`` and ``uniform(n)`` consume one shared position in that stream;
    ``words_read`` and ``draws`` count what they consumed, so ``words_read - draws``
    is the number of words rejected by ``uniform``.
    """

    __slots__ = ("_key", "_prefix", "_source", "draws", "words_read")

    def __init__(self, server_seed: bytes, client_seed: str, nonce: int) -> None:
        self._key = _check_server_seed(server_seed)
        self._prefix = _prefix(_check_client_seed(client_seed), _check_nonce(nonce))
        self._source: Iterator[int] | None = None
        self.words_read = 0
        self.draws = 0

    def block(self, index: int) -> bytes:
        """The 32-byte block ``index`` of the stream: HMAC-SHA256(server_seed, message(index))."""
        if not 0 <= index < _BLOCK_LIMIT:
            raise ShuffleError(f"block must be between 0 and 2**32 - 1, got {index}")
        return hmac.digest(self._key, self._prefix + index.to_bytes(4, "big"), "sha256")

    def word_blocks(self) -> Iterator[tuple[int, ...]]:
        """The stream as blocks of eight 32-bit words, from block 0 on (a fresh iterator on every call)."""
        inner, outer = _hmac_sha256_states(self._key)
        prefix, unpack = self._prefix, _WORDS_PER_BLOCK.unpack
        for index in range(_BLOCK_LIMIT):
            mac = inner.copy()
            mac.update(prefix + index.to_bytes(4, "big"))
            final = outer.copy()
            final.update(mac.digest())
            yield unpack(final.digest())
        raise ShuffleError("stream exhausted: the 4-byte block counter would overflow")

    def words(self) -> Iterator[int]:
        """The stream as 32-bit words, from block 0 on (a fresh iterator on every call)."""
        for block in self.word_blocks():
            yield from block

    def next_word(self) -> int:
        if self._source is None:
            self._source = self.words()
        self.words_read += 1
        return next(self._source)

    def uniform(self, n: int) -> int:
        value = uniform_below(n, self.next_word)
        self.draws += 1
        return value


# --------------------------------------------------------------------------- the shuffle


def _fisher_yates_blocks(size: int, blocks: Iterator[tuple[int, ...]]) -> tuple[int, ...]:
    """The Fisher–Yates shuffle of ``range(size)`` (docs/shuffle.md section 6: from the last position down,
    one ``uniform_below(i + 1)`` draw per step) over a stream given as blocks of words, with the rejection
    of section 5 inlined: the same draws in the same order, without a call per word."""
    order = list(range(size))
    words: tuple[int, ...] = ()
    pos = 0
    for i in range(size - 1, 0, -1):
        n = i + 1
        limit = _WORD_SPACE - _WORD_SPACE % n
        while True:
            if pos == len(words):
                words = next(blocks)
                pos = 0
            word = words[pos]
            pos += 1
            if word < limit:
                break
        j = word % n
        order[i], order[j] = order[j], order[i]
    return tuple(order)


def deck_order_indices(server_seed: bytes, client_seed: str, nonce: int, decks: int = 1) -> tuple[int, ...]:
    """The shuffled shoe as indices into ``canonical_deck(decks)``; element 0 is dealt first."""
    size = 52 * _check_decks(decks)
    return _fisher_yates_blocks(size, ShuffleStream(server_seed, client_seed, nonce).word_blocks())


def shuffled_deck(server_seed: bytes, client_seed: str, nonce: int, decks: int = 1) -> tuple[Card, ...]:
    """The shuffled shoe; element 0 is the first card dealt."""
    shoe = canonical_deck(_check_decks(decks))
    return tuple(shoe[i] for i in deck_order_indices(server_seed, client_seed, nonce, decks))


def order_text(cards: Iterable[Card]) -> str:
    """Cards in text notation separated by single spaces, e.g. ``"AS 10H KD"``."""
    return format_cards(cards)


def order_digest(cards: Iterable[Card]) -> str:
    """Lowercase hex SHA-256 of ``order_text(cards)`` encoded as ASCII (no trailing newline)."""
    return hashlib.sha256(order_text(cards).encode("ascii")).hexdigest()


@dataclass(frozen=True, slots=True)
class ShuffleResult:
    """A shuffled shoe with everything needed to audit it, except the (still secret) server seed."""

    algorithm: str
    commitment: str
    client_seed: str
    nonce: int
    decks: int
    indices: tuple[int, ...]
    cards: tuple[Card, ...]

    @property
    def order_text(self) -> str:
        return order_text(self.cards)

    @property
    def order_digest(self) -> str:
        return order_digest(self.cards)


def seeded_shuffle(server_seed: bytes, client_seed: str, nonce: int, decks: int = 1) -> ShuffleResult:
    """Shuffle a shoe and stamp the result with the algorithm version and the seed commitment."""
    indices = deck_order_indices(server_seed, client_seed, nonce, decks)
    shoe = canonical_deck(decks)
    return ShuffleResult(
        algorithm=SHUFFLE_ALGORITHM,
        commitment=commitment(server_seed),
        client_seed=client_seed,
        nonce=nonce,
        decks=decks,
        indices=indices,
        cards=tuple(shoe[i] for i in indices),
    )


# --------------------------------------------------------------------------- the client seed from contributions

CLIENT_SEED_RULE = "pokdeng-client-seed-v1"
"""The rule that derives a round's client seed from its contributions (docs/shuffle.md section 13);
also the ASCII domain tag at the start of the hashed message."""

PLATFORM = ""
"""The contributor id of the platform (the operator): the empty string, which no player id can be."""

_RULE_TAG = CLIENT_SEED_RULE.encode("ascii") + b"\x00"
_COUNT_LIMIT = 2**32  # the contribution count is 4 bytes
_FIELD_LIMIT = 2**16  # each length prefix is 2 bytes


def _length_prefixed(text: str, field: str) -> bytes:
    if not isinstance(text, str):
        raise ShuffleError(f"{field} must be a str, not {type(text).__name__}")
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ShuffleError(f"{field} cannot be encoded as UTF-8: {exc.reason} at position {exc.start}") from None
    if len(data) >= _FIELD_LIMIT:
        raise ShuffleError(f"{field} is too long: {len(data)} UTF-8 bytes, fewer than {_FIELD_LIMIT} allowed")
    return len(data).to_bytes(2, "big") + data


def client_seed_message(contributions: Iterable[tuple[str, str]]) -> bytes:
    """The bytes hashed into a round's client seed (docs/shuffle.md section 13).

    ``"pokdeng-client-seed-v1" || 0x00 || count as u32 BE`` and then, for each (contributor,
    client seed) in ascending order of the contributor's UTF-8 bytes, ``len as u16 BE ||
    contributor UTF-8 || len as u16 BE || seed UTF-8``. Each contributor appears once (its last
    contribution); the platform's id is the empty string.
    """
    pairs = sorted(contributions, key=lambda pair: pair[0].encode("utf-8", "surrogatepass"))
    contributors = [contributor for contributor, _seed in pairs]
    if len(set(contributors)) != len(contributors):
        raise ShuffleError("each contributor may appear once (its last contribution counts)")
    if len(pairs) >= _COUNT_LIMIT:
        raise ShuffleError(f"at most {_COUNT_LIMIT - 1} contributions")
    parts = [_RULE_TAG, len(pairs).to_bytes(4, "big")]
    for contributor, seed in pairs:
        parts.append(_length_prefixed(contributor, "contributor"))
        parts.append(_length_prefixed(seed, "client_seed"))
    return b"".join(parts)


def derive_client_seed(contributions: Iterable[tuple[str, str]]) -> str:
    """A round's client seed: the lowercase hex SHA-256 of ``client_seed_message(contributions)``.

    64 hexadecimal characters. With no contribution at all it is the documented default,
    ``derive_client_seed(())`` (docs/shuffle.md section 13)."""
    return hashlib.sha256(client_seed_message(contributions)).hexdigest()
