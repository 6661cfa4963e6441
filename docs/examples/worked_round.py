"""Verify a pokdeng round bundle from the documentation alone: docs/audit.md, docs/shuffle.md,
docs/checkpoints.md and docs/rules.md, re-implemented without a line of the service's code.

    python docs/examples/worked_round.py BUNDLE.json [--key PUBLIC_KEY ...] [--explain]

It needs Python 3.11 and the ``cryptography`` package (for Ed25519) and imports nothing of pokdeng:
it is the proof that an engineer in another language can check a round from the docs. Each
function names the section of docs/audit.md it follows ("§ Canonical JSON", ...).

``--key`` takes an Ed25519 public key as 64 hex digits, or a file of keys (lines of
``[KEY_ID] PUBLIC_KEY``, ``#`` starts a comment: what ``pokdeng keys show`` prints); repeat it for
several. Without a key the signed tree head's signature is not checked: the verdict is UNANCHORED
(every check passed, but nothing outside the file vouches for its events); with keys, a bundle without
a signed head fails. ``--explain`` prints every value the checks compute (the digests, the leaf, each
step of the proof, the root, the bytes the head signs, the bundle digest): docs/audit.md's worked
example quotes them.

Exit codes (docs/audit.md, "Verdicts and exit codes"): 0 PASS (perhaps with warnings), 1 FAIL (a check
failed), 2 the file or a key cannot be read, 5 UNANCHORED (0 with ``--allow-unanchored``).
The worked example: ``python docs/examples/worked_round.py docs/examples/worked_round.json --key
d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a`` (RFC 8032's first test key: a
test key, published, never an operator's).
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import re
import struct
import sys
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

# ---------------------------------------------------------------------------------------
# § Canonical JSON (RFC 8785) over the value domain: objects, arrays, text, true, false, null,
# and integers of magnitude below 2^53. No floats.

SAFE_INTEGER = 2**53


class DomainError(ValueError):
    """A value outside the canonical JSON domain (a float, an integer of 2^53 or more, a non-text key)."""


def canonical(value: Any) -> bytes:
    """RFC 8785 as UTF-8 bytes."""
    return _jcs(value).encode("utf-8")


def _jcs(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        if not -SAFE_INTEGER < value < SAFE_INTEGER:
            raise DomainError(f"the integer {value} is outside the canonical domain (|n| < 2^53)")
        return str(value)
    if isinstance(value, float):
        raise DomainError(f"a float ({value!r}) is outside the canonical domain")
    if isinstance(value, str):
        # The quote, the backslash and U+0000..U+001F are escaped (\b \f \n \r \t, else \u00xx in
        # lowercase hex); every other character is written as itself, in UTF-8.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ",".join(_jcs(item) for item in value) + "]"
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise DomainError("an object's keys are text")
        keys = sorted(value, key=lambda key: key.encode("utf-16-be"))  # by UTF-16 code units
        return "{" + ",".join(_jcs(key) + ":" + _jcs(value[key]) for key in keys) + "}"
    raise DomainError(f"{type(value).__name__} is not a JSON value")


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


# ---------------------------------------------------------------------------------------
# § Hash chain: the genesis of a stream, and each event's link. Digests are 64 lowercase hex
# digits; a link hashes the previous digest's hex TEXT (64 ASCII bytes), not its 32 bytes.

CHAIN_VERSION = "pokdeng-chain-v1"

# The bundle's documented form (docs/audit.md, "Round bundle" and "Types"; docs/events.md; docs/checkpoints.md).
# A type: "int" (a JSON integer, |n| < 2^53, not true/false), "text", "bool", "hex16"/"hex64"/"hex128" (that many
# lowercase hex digits), "sender", "version", "currency", "recipient" (texts of a grammar: "Senders" and "Types");
# a name ending in "?" also allows null; a tuple is an array of exactly those; a one-element list an array of
# that type; a dict an object with exactly those members (None: any value, compared whole by `copies`).
BUNDLE_VERSION = 2  # the version this verifier was written for; it also reads version 1 (VERSIONS)
EVENT_TYPES = {"position": "int", "kind": "text", "data": None, "command_id": "text", "timestamp": "text",
               "digest": "hex64"}  # fmt: skip
BALANCE_TYPES = {"wallet": "text", "before": "int?", "after": "int?", "net": "int"}
HEAD_TYPES = {"format": "text", "format_version": "int", "log_id": "text", "key_id": "hex16", "tree_size": "int",
              "root_hash": "hex64", "timestamp": "int", "signature": "hex128"}  # fmt: skip
LOG_TYPES = {"index": "int", "leaf": "hex64", "path": ["hex64"], "head": HEAD_TYPES}
INCLUSION_TYPES = {"table_id": "text", "root": "hex64", "size": "int", "index": "int", "leaf": "hex64",
                   "path": ["hex64"]}  # fmt: skip
TX_TYPES = {"tx_id": "text", "kind": "text", "player": "text", "amount": "int", "currency": "currency",
            "purpose": "text", "seat": "int?", "bettor": "text?", "status": "text", "accepted": "bool",
            "debits": ["text"], "resolved": "text"}  # fmt: skip
VERSIONS: dict[int, dict[str, Any]] = {  # format_version: (the members, those that may be absent, inclusion's)
    2: {"members": {
            "format": "text", "format_version": "int", "made_for": "recipient", "round_id": "text",
            "table_id": "text", "round_no": "int", "profile": None, "engine_version": "version", "shuffle": None,
            "decisions": None, "payouts": None, "settlement": None, "balances": [BALANCE_TYPES],
            "platform_transactions": [TX_TYPES], "times": None, "events": [EVENT_TYPES], "chain": None,
            "inclusion": None, "log": None, "bundle_digest": "hex64"},
        # platform_transactions: present exactly when the round's money is a platform's (docs/wallet.md)
        "optional": {"platform_transactions"}, "inclusion": INCLUSION_TYPES},
    1: {"members": {
            "format": "text", "format_version": "int", "round_id": "text", "table_id": "text", "round_no": "int",
            "profile": None, "engine_version": "version", "shuffle": None, "decisions": None, "payouts": None,
            "settlement": None, "balances": [BALANCE_TYPES], "times": None, "events": [EVENT_TYPES],
            "chain": None, "inclusion": None, "log": None, "bundle_digest": "hex64"},
        "optional": {"inclusion", "log"},  # absent from version 1 bundles made before them
        "inclusion": {**INCLUSION_TYPES, "period": "text", "checkpoint_position": "int", "checkpoint_digest": "hex64"}},
}  # fmt: skip
KINDS = {
    "round_opened", "contributions_opened", "shuffle_committed", "client_seed_contributed", "client_seed_fixed",
    "bet_placed", "cards_dealt", "pok_declared", "side_bet_window_opened", "side_bet_placed", "side_bets_settled",
    "turn_timed_out", "card_drawn", "player_stood", "hands_revealed", "bet_settled", "round_settled", "round_voided",
    "seed_revealed", "round_closed",
}  # fmt: skip
SENT_BY_OPERATOR = {"round_opened", "cards_dealt", "side_bets_settled", "turn_timed_out", "round_voided"}


def stored_time(text: str) -> bool:
    """A time as stored (docs/audit.md, ``timestamp``): Python's ``isoformat()`` of a UTC time that exists,
    ``.ffffff`` only when the microseconds are not 0."""
    if re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?\+00:00", text) is None:
        return False
    try:
        return datetime.fromisoformat(text).isoformat() == text
    except ValueError:
        return False


# Each kind's `data` members and their types (docs/events.md, "Round stream"; docs/audit.md, "Types"): exactly
# these. Those of ADDED_DATA were added after rounds were recorded without them, which lack them (read as "" and
# THB): a record may leave them out.
EVENT_DATA_TYPES: dict[str, dict[str, Any]] = {
    "round_opened": {
        "round_id": "text", "table_id": "text", "round_no": "int", "profile_name": "text", "profile_version": "int",
        "profile_options": [("text", "bool")], "engine_version": "version", "banker_player": "text?",
        "seats": [("int", "text?")], "min_stake": "int", "max_stake": "int", "currency": "currency", "by": "sender",
    },
    "contributions_opened": {"rule": "text"},
    "shuffle_committed": {
        "commitment": "hex64", "client_seed": "text", "nonce": "int", "algorithm": "text", "shoe_size": "int",
    },
    "client_seed_contributed": {"contributor": "text", "client_seed": "text", "by": "sender"},
    "bet_placed": {
        "seat": "int", "player": "text", "stake": "int", "reserved": "int", "banker_reserved": "int", "by": "sender",
    },
    "client_seed_fixed": {"client_seed": "hex64", "rule": "text", "contributions": [("text", "text")]},
    "cards_dealt": {"cards": [("int", "text")], "banker_up_card": "text?", "by": "sender"},
    "pok_declared": {"seat": "int", "cards": ["text"], "taem": "int", "label": "text"},
    "side_bet_window_opened": {"up_card": "text"},
    "side_bet_placed": {"seat": "int", "player": "text", "stake": "int", "reserved": "int", "by": "sender"},
    "side_bets_settled": {"natural": "bool", "results": [("int", "text", "int", "int")], "by": "sender"},
    "turn_timed_out": {"seat": "int", "action": "text", "by": "sender"},
    "card_drawn": {"seat": "int", "card": "text", "reason": "text", "by": "sender"},
    "player_stood": {"seat": "int", "reason": "text", "by": "sender"},
    "hands_revealed": {"seats": ["int"], "hands": [("int", ["text"])], "selective": "bool", "by": "sender"},
    "bet_settled": {
        "seat": "int", "player": "text", "stake": "int", "outcome": "text", "multiplier": "text", "gross": "int",
        "commission": "int", "net": "int", "hand": "text", "banker_hand": "text", "ante_net": "int?",
        "bet_net": "int?",
    },
    "round_settled": {
        "wallets": [("text", "int", "int")], "banker_net_before_commission": "int", "banker_commission": "int",
        "commission": "int", "house_net": "int",
    },
    "round_voided": {"reason": "text", "wallets": [("text", "int")], "by": "sender"},
    "seed_revealed": {"server_seed": "hex64"},
    "round_closed": {"outcome": "text"},
}  # fmt: skip
EVENT_DATA = {kind: set(members) for kind, members in EVENT_DATA_TYPES.items()}
ADDED_DATA = {kind: {"by"} for kind, fields in EVENT_DATA.items() if "by" in fields}
ADDED_DATA["round_opened"] = {"currency", "by"}


def sender(text: str) -> bool:
    """§ Senders: "", "operator", "operator:" NAME or "service:" NAME (NAME: one character or more)."""
    if text in ("", "operator"):
        return True
    return any(text.startswith(prefix) and len(text) > len(prefix) for prefix in ("operator:", "service:"))


GRAMMARS: dict[str, Callable[[str], bool]] = {
    "sender": sender,
    "version": lambda text: re.fullmatch(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)", text) is not None,
    "currency": lambda text: re.fullmatch(r"[A-Z]{3}", text) is not None,
    "recipient": lambda text: text in ("operator", "auditor") or (text.startswith("player:") and len(text) > 7),
    "hex16": lambda text: re.fullmatch(r"[0-9a-f]{16}", text) is not None,
    "hex64": lambda text: re.fullmatch(r"[0-9a-f]{64}", text) is not None,
    "hex128": lambda text: re.fullmatch(r"[0-9a-f]{128}", text) is not None,
}


def type_problem(value: Any, spec: Any, where: str) -> str | None:
    """§ Types: what makes ``value`` not of type ``spec``, or None."""
    if spec is None:
        return None
    if isinstance(spec, str):
        if spec.endswith("?"):
            return None if value is None else type_problem(value, spec[:-1], where)
        if spec == "int":
            ok = type(value) is int and -SAFE_INTEGER < value < SAFE_INTEGER
        elif spec == "bool":
            ok = type(value) is bool
        else:
            ok = isinstance(value, str) and (spec == "text" or GRAMMARS[spec](value))
        return None if ok else f"{where}: {value!r} is not of type {spec}"
    if isinstance(spec, tuple):
        if not isinstance(value, list) or len(value) != len(spec):
            return f"{where}: not an array of {len(spec)}"
        found = (type_problem(v, t, f"{where}[{i}]") for i, (v, t) in enumerate(zip(value, spec, strict=True)))
        return next((problem for problem in found if problem), None)
    if isinstance(spec, list):
        if not isinstance(value, list):
            return f"{where}: not an array"
        found = (type_problem(v, spec[0], f"{where}[{i}]") for i, v in enumerate(value))
        return next((problem for problem in found if problem), None)
    return members_problem(value, spec, where)


def members_problem(value: Any, spec: dict[str, Any], where: str, optional: set[str] | None = None) -> str | None:
    """An object with exactly the members of ``spec`` (those of ``optional`` may be absent), each of its type."""
    if not isinstance(value, dict):
        return f"{where}: not an object"
    extra, lacking = set(value) - set(spec), set(spec) - set(value) - (optional or set())
    if extra:
        return f"{where}: members {sorted(extra)} that docs/audit.md does not list"
    if lacking:
        return f"{where}: without {sorted(lacking)}"
    found = (type_problem(value[k], t, f"{where}.{k}") for k, t in spec.items() if k in value)
    return next((problem for problem in found if problem), None)


def genesis(stream: str) -> str:
    """SHA-256("pokdeng-chain-v1" 0x00 stream), stream = the round id, "table:" + the table id, or
    "wallet:" + the wallet id."""
    return hashlib.sha256(CHAIN_VERSION.encode("ascii") + b"\x00" + stream.encode("utf-8")).hexdigest()


def link(previous: str, kind: str, data: Any, position: int, command_id: str, timestamp: str) -> str:
    """A round's or table's event: SHA-256(previous (hex text) 0x00 canonical JSON of the five fields)."""
    body = {"kind": kind, "data": data, "position": position, "command_id": command_id, "timestamp": timestamp}
    return hashlib.sha256(previous.encode("ascii") + b"\x00" + canonical(body)).hexdigest()


def wallet_link(
    previous: str, kind: str, data: Any, position: int, timestamp: str, balance: int, reservations: dict[str, int]
) -> str:
    """A wallet's event: the wallet's state after it instead of a command id (§ The wallet chain)."""
    body = {
        "kind": kind,
        "data": data,
        "position": position,
        "timestamp": timestamp,
        "balance": balance,
        "reservations": reservations,
    }
    return hashlib.sha256(previous.encode("ascii") + b"\x00" + canonical(body)).hexdigest()


# ---------------------------------------------------------------------------------------
# § Merkle trees (RFC 9162 section 2.1): leaves, nodes, roots, inclusion and consistency proofs.


def leaf_hash(round_id: str, last_digest: str) -> bytes:
    """SHA-256(0x00 round id 0x00 the 32 raw bytes of the round's last chain digest)."""
    return sha256(b"\x00" + round_id.encode("utf-8") + b"\x00" + bytes.fromhex(last_digest))


def node_hash(left: bytes, right: bytes) -> bytes:
    return sha256(b"\x01" + left + right)


def merkle_root(leaves: Sequence[bytes]) -> bytes:
    """MTH(D[n]): the empty tree's root is SHA-256 of nothing; n > 1 splits at k, the largest power of 2 below n."""
    if not leaves:
        return sha256(b"")
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return node_hash(merkle_root(leaves[:k]), merkle_root(leaves[k:]))


HASH_SIZE = 32  # every leaf, node and root is a SHA-256 digest


def root_from_inclusion(
    leaf: bytes, index: int, size: int, path: Sequence[bytes], trace: list[str] | None = None
) -> bytes | None:
    """RFC 9162 section 2.1.3.2: the root a leaf and its path (leaf to root) lead to, or None
    (0 <= index < size; the leaf and every hash of the path 32 bytes)."""
    if not 0 <= index < size or len(leaf) != HASH_SIZE or any(len(p) != HASH_SIZE for p in path):
        return None
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if trace is not None:
                trace.append(f"H(0x01 || {p.hex()} || node) = {r.hex()}")
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
            if trace is not None:
                trace.append(f"H(0x01 || node || {p.hex()}) = {r.hex()}")
        fn >>= 1
        sn >>= 1
    return r if sn == 0 else None


def verify_inclusion(leaf: bytes, index: int, size: int, path: Sequence[bytes], root: bytes) -> bool:
    """RFC 9162 section 2.1.3.2: whether ``path`` proves ``leaf`` is leaf ``index`` of the tree of ``size``
    leaves whose root is ``root`` (a 32-byte root)."""
    return len(root) == HASH_SIZE and root_from_inclusion(leaf, index, size, path) == root


def verify_consistency(first: int, second: int, first_root: bytes, second_root: bytes, path: Sequence[bytes]) -> bool:
    """RFC 9162 section 2.1.4.2: whether ``path`` proves the tree of ``second`` leaves extends the one of
    ``first`` leaves, for 0 < first <= second (from the empty tree there is no proof: refused). Sizes equal:
    an empty path and equal roots; else the roots and every hash of the path are 32 bytes."""
    if not 0 < first <= second:
        return False
    if first == second:
        return not path and first_root == second_root
    if len(first_root) != HASH_SIZE or len(second_root) != HASH_SIZE or any(len(c) != HASH_SIZE for c in path):
        return False
    nodes = list(path)
    if first & (first - 1) == 0:  # first is an exact power of 2: its root starts the path
        nodes.insert(0, first_root)
    if not nodes:
        return False
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = nodes[0]
    for c in nodes[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == first_root and sr == second_root


# ---------------------------------------------------------------------------------------
# § Signed tree heads (docs/checkpoints.md "The bytes signed").

HEAD_CONTEXT = b"pokdeng-tree-head-v1\x00"


def _opaque(value: bytes) -> bytes:
    if not 1 <= len(value) <= 255:
        raise ValueError("an opaque field is 1 to 255 bytes")
    return bytes([len(value)]) + value


def head_signed_bytes(head: dict[str, Any]) -> bytes:
    root = bytes.fromhex(head["root_hash"])
    if len(root) != 32:
        raise ValueError("root_hash is 32 bytes")
    return (
        HEAD_CONTEXT
        + _opaque(head["log_id"].encode("utf-8"))
        + _opaque(head["key_id"].encode("ascii"))
        + struct.pack(">QQ", head["timestamp"], head["tree_size"])
        + _opaque(root)
    )


def key_id(public_key: bytes) -> str:
    return sha256(public_key)[:8].hex()


# ---------------------------------------------------------------------------------------
# § The shuffle: docs/shuffle.md sections 1 to 7 and 13 (its reference implementation, section 11).

RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"]
CANONICAL_DECK = [rank + suit for suit in "SHCD" for rank in RANKS]


def commitment(server_seed: bytes) -> str:
    return hashlib.sha256(server_seed).hexdigest()


def _words(server_seed: bytes, client_seed: str, nonce: int) -> Iterator[int]:
    cs = client_seed.encode("utf-8")
    prefix = b"pokdeng-shuffle-v1\x00" + len(cs).to_bytes(2, "big") + cs + nonce.to_bytes(8, "big")
    block = 0
    while True:
        digest = hmac.new(server_seed, prefix + block.to_bytes(4, "big"), hashlib.sha256).digest()
        for k in range(0, 32, 4):
            yield int.from_bytes(digest[k : k + 4], "big")
        block += 1


def shuffle(server_seed: bytes, client_seed: str, nonce: int, decks: int) -> list[str]:
    """The shoe in dealing order: element 0 is dealt first."""
    stream = _words(server_seed, client_seed, nonce)
    deck = CANONICAL_DECK * decks
    for i in range(len(deck) - 1, 0, -1):
        n = i + 1
        limit = (2**32 // n) * n
        w = next(stream)
        while w >= limit:  # the rejection step: the word is consumed and another read
            w = next(stream)
        j = w % n
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def client_seed_message(contributions: Sequence[Sequence[str]]) -> bytes:
    def field(text: str) -> bytes:
        data = text.encode("utf-8")
        return len(data).to_bytes(2, "big") + data

    ordered = sorted(contributions, key=lambda pair: pair[0].encode("utf-8"))
    message = b"pokdeng-client-seed-v1\x00" + len(ordered).to_bytes(4, "big")
    for contributor, seed in ordered:
        message += field(contributor) + field(seed)
    return message


def derive_client_seed(contributions: Sequence[Sequence[str]]) -> str:
    return hashlib.sha256(client_seed_message(contributions)).hexdigest()


# ---------------------------------------------------------------------------------------
# § Hands and payouts: docs/rules.md sections 1 and 3 (what a bet_settled must say).

RANK_VALUE = {"J": 11, "Q": 12, "K": 13, "A": 14, **{str(n): n for n in range(2, 11)}}
SUIT_VALUE = {"D": 0, "C": 1, "H": 2, "S": 3}  # tie-break order: diamonds < clubs < hearts < spades
KIND_ORDER = {"pok": 6, "tong": 5, "straight_flush": 4, "straight": 3, "sam_lueang": 2, "normal": 1}
ANTE_NAMES = {75: "AK flush", 74: "special pair", 73: "face-card combination", 72: "10 and face card", 71: "zero flush"}


def card(text: str) -> tuple[int, int]:
    """(rank value 2..14, suit value 0..3) of a card text such as "10H"."""
    rank, suit = text[:-1], text[-1]
    if rank not in RANK_VALUE or suit not in SUIT_VALUE:
        raise ValueError(f"not a card: {text!r}")
    return RANK_VALUE[rank], SUIT_VALUE[suit]


def points(text: str) -> int:
    rank = card(text)[0]
    return 1 if rank == 14 else 0 if rank >= 10 else rank


def taem(cards: Sequence[str]) -> int:
    return sum(points(c) for c in cards) % 10


def _flush(cards: Sequence[str]) -> bool:
    return len({card(c)[1] for c in cards}) == 1


def _pair(cards: Sequence[str]) -> bool:
    return len(cards) == 2 and card(cards[0])[0] == card(cards[1])[0]


def deng(cards: Sequence[str]) -> int:
    if len(cards) == 2:
        return 2 if _pair(cards) or _flush(cards) else 1
    return 3 if _flush(cards) else 1


def hand_kind(cards: Sequence[str], straights: bool, ace_low: bool) -> str:
    if len(cards) == 2:
        return "pok" if taem(cards) >= 8 else "normal"
    ranks = [card(c)[0] for c in cards]
    if len(set(ranks)) == 1:
        return "tong"
    if straights:
        values = sorted(1 if (ace_low and r == 14) else r for r in ranks)
        if values[0] + 1 == values[1] and values[1] + 1 == values[2]:
            return "straight_flush" if _flush(cards) else "straight"
    if all(11 <= r <= 13 for r in ranks):
        return "sam_lueang"
    return "normal"


CHOICE = (-1, 9, 3)  # a draw rule: (auto_max, choice_max, timeout_draw_max), docs/rules.md sections 3 and 5
AUTO_LOW = (3, 7, 3)  # taem 0-3 draws at once, 4-7 chooses; a timeout draws on 0-3
PROFILES: dict[tuple[str, int], dict[str, Any]] = {
    # docs/rules.md section 3: decks, the comparison, what a stake reserves, commissions, multipliers,
    # the players' and the banker's draw rules, whether the banker may reveal chosen hands first.
    ("classic", 1): {"decks": 1, "comparison": "classic", "reserve": 5, "draw": (CHOICE, CHOICE), "reveal": True},
    ("ante", 1): {"decks": 8, "comparison": "ante", "reserve": 1},
    ("room", 1): {
        "decks": 1,
        "comparison": "ranked",
        "reserve": 5,
        "draw": (AUTO_LOW, AUTO_LOW),
        "reveal": True,
        "player_commission": Fraction(3, 100),
        "banker_commission": Fraction(3, 100),
        "multipliers": {"pok": Fraction(1), "taem": Fraction(1)},
    },
    ("kingmaker", 1): {
        "decks": 1,
        "comparison": "ranked",
        "reserve": 5,
        "multipliers": {"pok": Fraction(19, 20), "taem": Fraction(19, 20)},
        "draw": (AUTO_LOW, (5, 5, 5)),  # the banker never chooses: it draws on 0-5, stays on 6-7
        "reveal": False,
        "sam_lueang_by_ranks": True,
        "loss_floor": Fraction(1),
        "side_bet": Fraction(6, 5),
    },
}
RANKED_MULTIPLIERS = {
    "pok_deng": Fraction(2),
    "tong": Fraction(5),
    "straight_flush": Fraction(5),
    "straight": Fraction(3),
    "sam_lueang": Fraction(3),
    "sam_deng": Fraction(3),
    "song_deng": Fraction(2),
}


class Hand:
    """A hand's value under a profile: its label, what it is paid at, and the key that orders hands."""

    def __init__(self, rules: dict[str, Any], options: dict[str, bool], cards: Sequence[str]) -> None:
        self.cards = list(cards)
        comparison = rules["comparison"]
        if comparison == "ante":
            self._ante()
            return
        straights = comparison == "ranked" or options.get("straights", False)
        self.kind = hand_kind(cards, straights, options.get("ace_low", False))
        self.taem = taem(cards)
        if comparison == "classic":
            self.deng = {"tong": 5, "straight_flush": 5, "straight": 3, "sam_lueang": 3}.get(self.kind, deng(cards))
            if self.kind == "pok":
                self.label = "pok deng" if self.deng == 2 else "pok"
            elif self.kind == "normal":
                self.label = {3: "sam deng", 2: "song deng"}.get(self.deng, "normal")
            else:
                self.label = self.kind.replace("_", " ")
            self.multiplier = Fraction(self.deng)
            self.key: tuple[int, ...] = (KIND_ORDER[self.kind], self.taem, self.deng)
            return
        d = deng(cards)
        top = max(card(c) for c in cards)  # the highest card, by rank then suit
        if self.kind == "pok":
            name, within = ("pok_deng" if d == 2 else "pok"), (self.taem,)
        elif self.kind == "normal":
            name, within = {3: "sam_deng", 2: "song_deng"}.get(d, "taem"), (self.taem,)
        elif self.kind == "sam_lueang" and rules.get("sam_lueang_by_ranks"):
            name, within = self.kind, (*sorted((card(c)[0] for c in cards), reverse=True), top[1])
        else:
            name, within = self.kind, top
        self.label = name.replace("_", " ")
        self.multiplier = {**RANKED_MULTIPLIERS, **rules["multipliers"]}[name]
        self.key = (KIND_ORDER[self.kind], *within)

    def _ante(self) -> None:
        cards = self.cards
        if len(cards) != 2:
            raise ValueError("an ante hand has two cards")
        (ra, sa), (rb, sb) = card(cards[0]), card(cards[1])
        t = taem(cards)
        flush, pair, faces = sa == sb, ra == rb, {ra, rb} <= {11, 12, 13}
        if t >= 8:
            value = t * 10
        elif flush and {ra, rb} == {14, 13}:
            value = 75
        elif pair and ra in (14, 5, 6, 10):
            value = 74
        elif faces:
            value = 73
        elif 10 in (ra, rb) and ({ra, rb} & {11, 12, 13}):
            value = 72
        elif flush and t == 0 and points(cards[0]) and points(cards[1]):
            value = 71
        else:
            value = t * 10
        self.value = value
        self.special = flush or pair or 71 <= value <= 75
        if 71 <= value <= 75:
            self.label = ANTE_NAMES[value]
        else:
            self.label = f"{value // 10}" + ((" pair" if pair else " flush") if self.special else "")
        self.key = (value,)


def classic_multiplier(winner: Hand, loser: Hand) -> Fraction:
    if winner.kind != loser.kind:
        return Fraction(2) if {winner.kind, loser.kind} == {"tong", "sam_lueang"} else Fraction(winner.deng)
    if winner.taem != loser.taem:
        return Fraction(winner.deng)
    return Fraction(winner.deng - loser.deng)


def expected_bet(rules: dict[str, Any], player: Hand, banker: Hand, stake: int) -> dict[str, Any]:
    """What a stake on ``player`` against ``banker`` settles to: outcome, multiplier, gross, commission,
    net (and for ante the ante's and the bet's nets). § Money."""
    if rules["comparison"] == "ante":
        half = stake // 2
        if player.value > banker.value:
            plain = banker.value in (0, 60) and not banker.special
            strong = player.value >= 80 and player.special
            ante, bet, outcome = half, (half if player.special and (not plain or strong) else 0), "player_wins"
        elif player.value < banker.value:
            ante, bet, outcome = -half, (-half if banker.special else 0), "banker_wins"
        else:
            ante, bet, outcome = 0, 0, "tie"
        net = ante + bet
        m = Fraction(abs(net), stake)
        return {
            "outcome": outcome,
            "multiplier": m,
            "gross": abs(net),
            "commission": 0,
            "net": net,
            "ante_net": ante,
            "bet_net": bet,
        }
    if player.key == banker.key:
        return {"outcome": "tie", "multiplier": Fraction(0), "gross": 0, "commission": 0, "net": 0}
    classic = rules["comparison"] == "classic"
    if player.key > banker.key:
        m = classic_multiplier(player, banker) if classic else player.multiplier
        gross = stake * m.numerator // m.denominator  # floored
        rate = rules.get("player_commission", Fraction(0))
        commission = -(-gross * rate.numerator // rate.denominator)  # rounded up
        return {
            "outcome": "player_wins",
            "multiplier": m,
            "gross": gross,
            "commission": commission,
            "net": gross - commission,
        }
    m = classic_multiplier(banker, player) if classic else banker.multiplier
    m = max(m, rules.get("loss_floor", Fraction(0)))  # kingmaker: a loser pays at least 1x
    gross = stake * m.numerator // m.denominator
    return {"outcome": "banker_wins", "multiplier": m, "gross": gross, "commission": 0, "net": -gross}


# ---------------------------------------------------------------------------------------
# the verdict


class Verdict:
    """§ Verdicts and exit codes: FAIL if a check failed; else UNANCHORED if no signed tree head was checked to
    cover the round (no key, or no head); else PASS."""

    def __init__(self, subject: str) -> None:
        self.subject = subject
        self.checks: list[tuple[str, bool, str]] = []
        self.warnings: list[str] = []
        self.unanchored = ""  # why nothing checked anchors the bundle

    def add(self, name: str, ok: bool, detail: str) -> bool:
        self.checks.append((name, ok, detail))
        return ok

    def leave_unanchored(self, why: str) -> None:
        self.unanchored = why
        self.warnings.append(why)

    @property
    def ok(self) -> bool:
        """Every check passed (an unanchored bundle's too: ``status`` tells them apart)."""
        return bool(self.checks) and all(ok for _n, ok, _d in self.checks)

    @property
    def status(self) -> str:
        return "FAIL" if not self.ok else "UNANCHORED" if self.unanchored else "PASS"

    def render(self) -> str:
        lines = [f"{self.status}  {self.subject}"]
        lines += [f"  {'ok ' if ok else 'BAD'}  {name}: {detail}" for name, ok, detail in self.checks]
        lines += [f"  WARN {text}" for text in self.warnings]
        return "\n".join(lines)


class Failed(Exception):
    """One check's first problem."""


def _listed(value: Any) -> list[Any]:
    """A member that should be a list, as a list (its form is its own check's: a warning only reads it)."""
    return value if isinstance(value, list) else []


def _check(verdict: Verdict, name: str, run: Callable[[], str]) -> bool:
    """Run one check: it returns what it proved, or raises ``Failed`` (or any error: a missing or malformed
    field it reads). Nothing escapes: whatever the file holds, every check has a verdict."""
    try:
        return verdict.add(name, True, run())
    except Failed as problem:
        return verdict.add(name, False, str(problem))
    except Exception as error:
        return verdict.add(name, False, f"missing or malformed field: {error!r}")


class NotAnInteger(ValueError):
    """§ Canonical JSON: a number with a fraction or an exponent (100.0, 1e2), NaN or Infinity."""


def parse(raw: bytes) -> Any:
    """The bundle's JSON, refusing every number that is not written as an integer."""

    def refuse(text: str) -> Any:
        raise NotAnInteger(f"the number {text[:40]} is not an integer: a bundle's numbers are integers")

    return json.loads(raw, parse_float=refuse, parse_constant=refuse)


def _require(condition: bool, problem: str) -> None:
    if not condition:
        raise Failed(problem)


# ---------------------------------------------------------------------------------------
# § Round bundle: the checks, in order


class BundleCheck:
    def __init__(self, raw: bytes, keys: dict[str, bytes], explain: Callable[[str], None]) -> None:
        self.raw = raw
        self.keys = keys
        self.say = explain
        self.bundle: dict[str, Any] = {}
        self.events: list[dict[str, Any]] = []

    def first(self, kind: str) -> dict[str, Any] | None:
        return next((e for e in self.events if e["kind"] == kind), None)

    def all(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["kind"] == kind]

    @property
    def opening(self) -> dict[str, Any]:
        opened = self.events[0]
        _require(opened["kind"] == "round_opened", f"event {opened['position']} is {opened['kind']}, not round_opened")
        data: dict[str, Any] = opened["data"]
        return data

    @property
    def rules(self) -> dict[str, Any]:
        opened = self.opening
        found = PROFILES.get((opened["profile_name"], opened["profile_version"]))
        _require(found is not None, f"profile {opened['profile_name']} v{opened['profile_version']} is not known here")
        assert found is not None
        return found

    @property
    def options(self) -> dict[str, bool]:
        return {name: value for name, value in self.opening["profile_options"]}

    def run(self) -> Verdict:
        try:
            bundle = parse(self.raw)
        except NotAnInteger as error:
            verdict = Verdict("bundle")
            verdict.add("form", False, str(error))
            return verdict
        except Exception as error:  # (not JSON, not UTF-8, nested too deep for the parser)
            verdict = Verdict("bundle")
            verdict.add("form", False, f"not JSON: {error!r}")
            return verdict
        verdict = Verdict(f"bundle of round {bundle.get('round_id') if isinstance(bundle, dict) else '?'}")
        if not isinstance(bundle, dict) or not isinstance(bundle.get("events"), list) or not bundle["events"]:
            verdict.add("form", False, "not a round bundle (no events)")
            return verdict
        self.bundle, self.events = bundle, bundle["events"]
        for name, step in (
            ("form", self.form),
            ("bundle digest", self.digest),
            ("chain", self.chain),
            ("record", self.record),
            ("commitment", lambda: self.commitment(verdict)),
            ("client seed", self.client_seed),
            ("shuffle", self.shuffle),
            ("cards", self.cards),
            ("turns", self.turns),
            ("hands", self.hands),
            ("money", self.money),
            ("copies", self.copies),
            ("balances", self.balances),
        ):
            _check(verdict, name, step)
        if "platform_transactions" in bundle:
            _check(verdict, "platform transactions", self.platform_transactions)
            resolved = [
                t for t in _listed(bundle["platform_transactions"]) if isinstance(t, dict) and t.get("resolved")
            ]
            verdict.warnings += [f"platform transaction {t.get('tx_id')}: resolved by an operator, not checked"
                                 for t in resolved]  # fmt: skip
        elif any(isinstance(b, dict) and b.get("before") is None for b in _listed(bundle.get("balances"))):
            verdict.warnings.append(
                "its balances are a platform's and it carries no platform_transactions: its money is not checked"
            )
        if bundle.get("inclusion") is not None:
            _check(verdict, "inclusion", self.inclusion)
        try:
            self.anchor(verdict)
        except Exception as error:  # (a head too malformed to print what it signs)
            verdict.add("log inclusion", False, f"missing or malformed field: {error!r}")
        if bundle.get("format_version") == 1:
            verdict.warnings.append(
                "format version 1: its balances may leave wallets out (it does not say whom it was made for) and "
                "its checkpoint's period, position and digest are not checked (nothing offline can)"
            )
        return verdict

    # -- 1. the file ---------------------------------------------------------------------

    def form(self) -> str:
        b = self.bundle
        version = b.get("format_version")
        _require(
            b.get("format") == "pokdeng-round-bundle" and type(version) is int and version in VERSIONS,
            f"not a pokdeng-round-bundle of format_version {' or '.join(map(str, sorted(VERSIONS)))}",
        )
        # exactly the documented members, each of its type: nothing may ride along that no check reads
        form = VERSIONS[int(version)]
        problem = members_problem(b, form["members"], "bundle", form["optional"])
        _require(problem is None, str(problem))
        for event in b["events"]:
            where = f"event {event['position']} ({event['kind']})"
            _require(event["kind"] in KINDS, f"event {event['position']}: kind {event['kind']!r} is not a round's")
            _require(event["position"] >= 2, f"{where}: the stream's creation (position 1) is not in a bundle")
            # docs/events.md: exactly these members, each of its type; ADDED_DATA's may be absent
            kind = event["kind"]
            problem = members_problem(event["data"], EVENT_DATA_TYPES[kind], f"{where} data", ADDED_DATA.get(kind))
            _require(problem is None, str(problem))
        if "platform_transactions" in b:
            nulls = all(entry["before"] is None for entry in b["balances"])
            _require(nulls, "platform_transactions in a bundle whose balances are the store's (not null)")
        inclusion, log = b.get("inclusion"), b.get("log")
        if inclusion is not None:
            problem = members_problem(inclusion, form["inclusion"], "inclusion")
            _require(problem is None, str(problem))
        if log is not None:
            problem = members_problem(log, LOG_TYPES, "log")
            _require(problem is None, str(problem))
        expected = canonical(b) + b"\n"
        if self.raw != expected:
            at = next((i for i, (x, y) in enumerate(zip(self.raw, expected, strict=False)) if x != y), None)
            at = min(len(self.raw), len(expected)) if at is None else at
            raise Failed(f"the file is not its canonical JSON and a newline (the first difference at byte {at})")
        return f"canonical JSON (RFC 8785) and a newline, {len(self.raw)} bytes"

    def digest(self) -> str:
        body = {k: v for k, v in self.bundle.items() if k != "bundle_digest"}
        computed = hashlib.sha256(canonical(body)).hexdigest()
        self.say(f"bundle digest: SHA-256 of the {len(canonical(body))} bytes of the body = {computed}")
        _require(computed == self.bundle.get("bundle_digest"), f"SHA-256 of the body is {computed}, not the stated one")
        return computed

    # -- 2. the record -------------------------------------------------------------------

    def chain(self) -> str:
        round_id = self.bundle["round_id"]
        previous = genesis(round_id)
        data = CHAIN_VERSION.encode() + b"\x00" + round_id.encode()
        self.say(f"genesis: SHA-256({CHAIN_VERSION!r} 0x00 {round_id!r}), of the bytes {data.hex()}, = {previous}")
        table = "table:" + self.bundle["table_id"]
        self.say(f"(the genesis of the round's table stream, {table!r}: {genesis(table)})")
        for entry in self.bundle["balances"]:
            wallet = "wallet:" + entry["wallet"]
            self.say(f"(the genesis of a wallet's stream, {wallet!r}: {genesis(wallet)})")
        stated = self.bundle["chain"]
        _require(stated["version"] == CHAIN_VERSION, f"chain version {stated['version']!r}")
        _require(stated["genesis"] == previous, f"the stated genesis is not SHA-256(pokdeng-chain-v1 0x00 {round_id})")
        for expected, event in enumerate(self.events, 2):
            position, kind = event["position"], event["kind"]
            _require(position == expected, f"position {position} where {expected} was expected")
            digest = link(previous, kind, event["data"], position, event["command_id"], event["timestamp"])
            if position == 2:
                body = {k: event[k] for k in ("kind", "data", "position", "command_id", "timestamp")}
                self.say(f"event 2 digests {previous}, 0x00 and {canonical(body).decode()}")
            self.say(f"event {position} {kind}: {digest}")
            _require(digest == event["digest"], f"event {position} ({kind}) does not match its digest")
            previous = digest
        _require(stated["last"] == previous, "the stated chain end is not the last event's digest")
        return f"{len(self.events)} events linked from the genesis of {round_id}, ending at {previous}"

    def record(self) -> str:
        kinds = [e["kind"] for e in self.events]
        opened = self.opening
        b = self.bundle
        _require(opened["round_id"] == b["round_id"] and opened["table_id"] == b["table_id"], "another round's opening")
        _require(
            opened["round_no"] == b["round_no"] and b["round_id"] == f"{b['table_id']}#{b['round_no']}",
            "the round id is not <table id>#<round number>",
        )
        _require(
            kinds[-1] == "round_closed" and kinds.count("round_closed") == 1, "the record does not end at its close"
        )
        ends = [k for k in kinds if k in ("round_settled", "round_voided")]
        _require(len(ends) == 1, "a round is settled or voided, once")
        outcome = "settled" if ends[0] == "round_settled" else "voided"
        _require(self.events[-1]["data"]["outcome"] == outcome, f"round_closed says {self.events[-1]['data']}")
        seats = dict(tuple(pair) for pair in opened["seats"])
        for event in self.all("bet_placed") + self.all("side_bet_placed"):
            seat, player = event["data"]["seat"], event["data"]["player"]
            where = f"event {event['position']} ({event['kind']})"
            _require(
                seat in seats and player != opened["banker_player"], f"{where}: no stake on seat {seat} by {player}"
            )
            _require(self.rules["comparison"] != "ranked" or seats[seat] == player, f"{where}: only the holder stakes")
        committed = self.first("shuffle_committed")
        _require(committed is not None and kinds.index("shuffle_committed") <= 2, "the opening commits the shuffle")
        assert committed is not None
        nonce = committed["data"]["nonce"]
        _require(nonce == b["round_no"], f"the shuffle's nonce {nonce} is not the round's number")
        _require(GRAMMARS["version"](opened["engine_version"]), f"engine version {opened['engine_version']!r}")
        _require(GRAMMARS["currency"](opened.get("currency", "THB")), f"currency {opened.get('currency')!r}")
        self.senders()
        if "contributions_opened" in kinds:
            _require(committed["data"]["client_seed"] == "", "shuffle_committed carries no client seed")
        _require(kinds.count("seed_revealed") <= 1, "the seed is revealed once")
        if "seed_revealed" in kinds:
            _require(kinds.index("seed_revealed") == len(kinds) - 2, "seed_revealed comes just before round_closed")
        else:
            _require(outcome == "voided", "a settled round reveals its seed")
        return f"round {b['round_id']} from round_opened to round_closed ({outcome})"

    def senders(self) -> None:
        """§ Senders (docs/events.md, "Who sent a command"): of every ``by`` present (records made before senders
        were named have none), its grammar; "" on an event that is not its command's first (it shares that
        one's sender), on a draw or stay of reason auto or timeout and on the showdown (hands_revealed not
        selective); never "" on the operator-only commands' events, the platform's ContributeSeed and the
        choices made for the house's hand (banker_player null)."""
        banker = self.opening["banker_player"]
        for group in self._groups():
            for index, event in enumerate(group):
                kind, data = event["kind"], event["data"]
                if "by" not in data:
                    continue
                by, where = data["by"], f"event {event['position']} ({kind})"
                _require(sender(by), f"{where}: sender {by!r} is not '', operator, operator:NAME or service:NAME")
                automatic = index > 0 or data.get("reason") in ("auto", "timeout") or data.get("selective") is False
                if automatic and kind not in SENT_BY_OPERATOR:
                    _require(by == "", f"{where}: sender {by!r} on an automatic event (its command's is its first's)")
                    continue
                platform = kind == "client_seed_contributed" and data["contributor"] == ""
                house = banker is None and (
                    (kind in ("card_drawn", "player_stood") and data["seat"] == 0) or kind == "hands_revealed"
                )
                _require(
                    by != "" or not (kind in SENT_BY_OPERATOR or platform or house),
                    f"{where}: {'an operator' if not house else 'the house'}'s command names its sender (by)",
                )

    def commitment(self, verdict: Verdict) -> str:
        shuffled = self.bundle["shuffle"]
        committed = self.first("shuffle_committed")
        _require(committed is not None, "no shuffle_committed")
        assert committed is not None
        _require(
            committed["data"]["commitment"] == shuffled["commitment"], "shuffle.commitment is not the recorded one"
        )
        revealed = self.first("seed_revealed")
        if revealed is None:  # voided without its seed (the vault key was lost)
            _require(shuffled["server_seed"] == "" and shuffled["deck_order"] == [], "a seed that was never revealed")
            verdict.warnings.append(
                "the server seed was withheld (voided without revealing it): its cards are unchecked"
            )
            return "withheld: the round was voided without revealing its server seed"
        _require(
            revealed["data"]["server_seed"] == shuffled["server_seed"], "shuffle.server_seed is not the revealed one"
        )
        seed = bytes.fromhex(shuffled["server_seed"])
        _require(commitment(seed) == shuffled["commitment"], "SHA-256 of the server seed is not the commitment")
        return f"SHA-256 of the revealed server seed is the commitment {shuffled['commitment']}"

    def client_seed(self) -> str:
        kinds = [e["kind"] for e in self.events]
        shuffled = self.bundle["shuffle"]
        committed = kinds.index("shuffle_committed")
        cards = [i for i, k in enumerate(kinds) if k in ("cards_dealt", "card_drawn")]
        first_card = cards[0] if cards else len(kinds)
        if "contributions_opened" not in kinds:  # a round of engine 1.0.0: the client seed came with the commitment
            _require(
                "client_seed_fixed" not in kinds and "client_seed_contributed" not in kinds,
                "contributions in a round that opened none",
            )
            _require(committed < first_card, "the commitment comes before the first card")
            seed = self.events[committed]["data"]["client_seed"]
            _require(shuffled["client_seed"] == seed, "shuffle.client_seed is not the one recorded with the commitment")
            return f"{seed!r}, given with the commitment (a round without contributions)"
        opened = kinds.index("contributions_opened")
        _require(
            kinds.count("contributions_opened") == 1 and opened < committed, "contributions open before the commitment"
        )
        rule = self.events[opened]["data"]["rule"]
        _require(rule == "pokdeng-client-seed-v1", f"unknown rule {rule!r}")
        _require(shuffled.get("client_seed_rule") == rule, "shuffle.client_seed_rule is not the round's rule")
        latest: dict[str, str] = {}
        fixed: dict[str, Any] | None = None
        for i, event in enumerate(self.events):
            if event["kind"] == "client_seed_contributed":
                _require(i > committed, f"event {event['position']}: a contribution before the commitment")
                _require(fixed is None, f"event {event['position']}: a contribution after the client seed was fixed")
                latest[event["data"]["contributor"]] = event["data"]["client_seed"]
            elif event["kind"] == "client_seed_fixed":
                _require(fixed is None, f"event {event['position']}: the client seed is fixed twice")
                _require(committed < i < first_card or not cards, f"event {event['position']}: fixed after a card")
                fixed = event
        if fixed is None:
            _require(not cards, "cards were dealt, but no client seed was fixed")
            _require(shuffled["deck_order"] == [], "a deck order without a fixed client seed")
            return f"never fixed: voided before the deal ({len(latest)} contribution(s))"
        data = fixed["data"]
        expected = sorted(([c, s] for c, s in latest.items()), key=lambda pair: pair[0].encode("utf-8"))
        _require(data["rule"] == rule, f"client_seed_fixed names rule {data['rule']!r}")
        _require(
            [list(p) for p in data["contributions"]] == expected, "it does not list each last contribution, sorted"
        )
        message = client_seed_message(expected)
        derived = hashlib.sha256(message).hexdigest()
        self.say(f"client seed message: {message.hex()}")
        self.say(f"client seed: SHA-256 of it = {derived}")
        _require(data["client_seed"] == derived, f"the contributions derive {derived}, not {data['client_seed']}")
        _require(shuffled["client_seed"] == derived, "shuffle.client_seed is not the fixed one")
        _require(shuffled.get("contributions") == expected, "shuffle.contributions are not the ones fixed")
        return f"{derived}, derived from {len(expected)} contribution(s) after the commitment, before the first card"

    def shuffle(self) -> str:
        shuffled = self.bundle["shuffle"]
        committed = self.first("shuffle_committed")
        assert committed is not None
        data = committed["data"]
        _require(shuffled["algorithm"] == data["algorithm"] == "pokdeng-shuffle-v1", "not pokdeng-shuffle-v1")
        _require(shuffled["nonce"] == data["nonce"], "shuffle.nonce is not the recorded nonce")
        _require(
            shuffled["decks"] == self.rules["decks"] and data["shoe_size"] == 52 * shuffled["decks"],
            "shuffle.decks is not the profile's (or not the recorded shoe size)",
        )
        if shuffled["server_seed"] == "" or (
            self.first("client_seed_fixed") is None and "contributions_opened" in [e["kind"] for e in self.events]
        ):
            _require(shuffled["deck_order"] == [], "a deck order without a seed or a fixed client seed")
            return "no shoe: no seed revealed or no client seed fixed"
        deck = shuffle(
            bytes.fromhex(shuffled["server_seed"]), shuffled["client_seed"], data["nonce"], shuffled["decks"]
        )
        order = " ".join(deck)
        self.say(f"deck order: {order}")
        self.say(f"order digest (docs/shuffle.md section 9): {hashlib.sha256(order.encode('ascii')).hexdigest()}")
        _require(shuffled["deck_order"] == deck, "shuffle.deck_order is not the shuffle of the seeds")
        return f"{len(deck)} cards of pokdeng-shuffle-v1 from the server seed, client seed and nonce {data['nonce']}"

    def cards(self) -> str:
        deck = self.bundle["shuffle"]["deck_order"]
        if not deck:
            return "no shoe to check the cards against"
        opened = self.opening
        betting = sorted({e["data"]["seat"] for e in self.all("bet_placed")})
        dealt_seats = [seat for seat, _holder in opened["seats"]] if self.rules["comparison"] == "ante" else betting
        held: dict[int, list[str]] = {}
        used = 0
        for event in self.events:
            data = event["data"]
            if event["kind"] == "cards_dealt":
                order = [seat for seat, _c in data["cards"]]
                _require(order == [*sorted(dealt_seats), 0] * 2, f"event {event['position']}: the deal order {order}")
                for seat, text in data["cards"]:
                    _require(
                        text == deck[used], f"event {event['position']}: {text} dealt where the shoe has {deck[used]}"
                    )
                    held.setdefault(seat, []).append(text)
                    used += 1
                up = data["banker_up_card"]
                _require(up is None or up == held[0][0], "the up card is not the banker's first card")
            elif event["kind"] == "card_drawn":
                _require(
                    data["card"] == deck[used],
                    f"event {event['position']}: {data['card']} drawn, the shoe has {deck[used]}",
                )
                _require(
                    len(held.get(data["seat"], [])) == 2,
                    f"event {event['position']}: a third card to a hand without two",
                )
                held[data["seat"]].append(data["card"])
                used += 1
            elif event["kind"] == "pok_declared":
                _require(
                    list(data["cards"]) == held.get(data["seat"]) and taem(data["cards"]) >= 8,
                    f"event {event['position']}: not the seat's pok",
                )
            elif event["kind"] == "hands_revealed":
                for seat, cards in data["hands"]:
                    _require(
                        list(cards) == held.get(seat), f"event {event['position']}: seat {seat} does not hold {cards}"
                    )
        if self.rules["decks"] == 1:
            _require(len(set(deck[:used])) == used, "a card of a single deck dealt twice")
        return f"{used} cards, dealt and drawn in the shoe's order from deck_order[0]"

    def turns(self) -> str:
        """Who acted, in what order and why (docs/rules.md section 5): players in seat order, then the
        banker; a pok never draws; "auto" where the draw rule leaves no choice, "timeout" after
        turn_timed_out; a selective reveal only where the profile allows it, before the banker acts."""
        rules = self.rules
        actions = [e for e in self.events if e["kind"] in ("card_drawn", "player_stood", "turn_timed_out")]
        if "draw" not in rules:
            _require(not actions, "nobody draws or chooses in this profile")
            return "no draws in this profile: the hands are compared at once"
        held: dict[int, list[str]] = {}
        poks: set[int] = set()
        acted: list[int] = []
        revealed: set[int] = set()
        timed_out: tuple[int, str] | None = None
        for event in self.events:
            data, where = event["data"], f"event {event['position']} ({event['kind']})"
            if event["kind"] == "cards_dealt":
                for seat, text in data["cards"]:
                    held.setdefault(seat, []).append(text)
            elif event["kind"] == "pok_declared":
                poks.add(data["seat"])
            elif event["kind"] == "turn_timed_out":
                _require(timed_out is None and data["action"] in ("draw", "stay"), f"{where}: a second timeout")
                timed_out = (data["seat"], data["action"])
            elif event["kind"] in ("card_drawn", "player_stood"):
                seat, draws = data["seat"], event["kind"] == "card_drawn"
                _require(seat in held and seat not in poks and seat not in acted, f"{where}: seat {seat} may not act")
                _require(
                    0 not in acted and seat not in revealed, f"{where}: after the banker played or the hand showed"
                )
                auto_max, choice_max, timeout_max = rules["draw"][0 if seat else 1]
                t = taem(held[seat])
                if timed_out is not None:
                    _require(timed_out == (seat, "draw" if draws else "stay"), f"{where}: not what the timeout said")
                    _require(data["reason"] == "timeout" and draws == (t <= timeout_max), f"{where}: the timeout rule")
                elif t <= auto_max or t > choice_max:
                    want = "draw" if t <= auto_max else "stay"
                    _require(data["reason"] == "auto" and draws == (want == "draw"), f"{where}: an automatic {want}")
                else:
                    _require(data["reason"] == "choice", f"{where}: taem {t} is the hand's own choice")
                timed_out = None
                acted.append(seat)
                if draws:
                    held[seat].append(data["card"])
            elif event["kind"] == "hands_revealed":
                seats = list(data["seats"])
                _require(seats == sorted(set(seats)) and not set(seats) & revealed, f"{where}: seats {seats}")
                if data["selective"]:
                    auto_max, choice_max, _t = rules["draw"][1]
                    _require(rules["reveal"] and 0 not in acted, f"{where}: no selective reveal here")
                    _require(auto_max < taem(held[0]) <= choice_max, f"{where}: the banker has no choice to make")
                else:
                    rest = sorted(s for s in held if s and s not in revealed)
                    _require(seats == rest, f"{where}: the showdown shows every hand not yet shown")
                revealed |= set(seats)
        players = [s for s in acted if s]
        expected = [s for s in sorted(held) if s and s not in poks]
        _require(players == expected[: len(players)], f"players acted in the order {players}, not {expected}")
        if self.first("round_settled") is not None:
            _require(revealed == {s for s in held if s}, "not every hand was shown")
            if 0 in poks:
                _require(not acted, "the banker's pok ends the round: nobody draws")
            elif len(players) < len(expected):
                raise Failed(f"players acted in the order {players}, not {expected}")
        return f"{len(acted)} action(s): players in seat order, then the banker, each by the draw rule"

    def hands(self) -> str:
        """Every bet_settled follows from the hands it compares (those of the hands_revealed before it)."""
        rules, options = self.rules, self.options
        shown: dict[int, list[str]] = {}
        count = 0
        for event in self.events:
            data = event["data"]
            if event["kind"] == "hands_revealed":
                shown = {seat: list(cards) for seat, cards in data["hands"]}
            elif event["kind"] == "bet_settled":
                player, banker = Hand(rules, options, shown[data["seat"]]), Hand(rules, options, shown[0])
                want = expected_bet(rules, player, banker, data["stake"])
                where = f"event {event['position']} (seat {data['seat']}, {data['player']})"
                _require(
                    data["outcome"] == want["outcome"], f"{where}: {data['outcome']}, the hands say {want['outcome']}"
                )
                _require(
                    data["multiplier"] == str(want["multiplier"]),
                    f"{where}: multiplier {data['multiplier']}, the hands say {want['multiplier']}",
                )
                _require(
                    (data["hand"], data["banker_hand"]) == (player.label, banker.label),
                    f"{where}: hands {data['hand']!r} and {data['banker_hand']!r}, not {player.label!r} and "
                    f"{banker.label!r}",
                )
                count += 1
        return f"{count} stake(s): each outcome, multiplier and hand as docs/rules.md compares the hands"

    def money(self) -> str:
        """§ Money: each stake's arithmetic, the side bets, reservations, and the round's books to zero."""
        rules, opened = self.rules, self.opening
        banker = opened["banker_player"]
        reserved: dict[str, int] = {}  # in the order wallets first reserve
        nets: dict[str, int] = {}
        banker_reserved = banker_sum = player_commission = 0
        stakes: dict[tuple[int, str], int] = {}
        low, high = opened["min_stake"], opened["max_stake"]
        _require(0 < low <= high, f"round_opened: stake limits {low}..{high}")
        even = rules["comparison"] != "ante" or (low % 2 == 0 and high % 2 == 0)
        _require(even, f"round_opened: ante limits must be even, not {low}..{high}")
        for event in self.events:
            data, where = event["data"], f"event {event['position']} ({event['kind']})"
            if event["kind"] == "bet_placed":
                stake = data["stake"]
                _require(stake > 0 and (rules["comparison"] != "ante" or stake % 2 == 0), f"{where}: stake {stake}")
                _require(opened["min_stake"] <= stake <= opened["max_stake"], f"{where}: outside the table's limits")
                _require(data["reserved"] == stake * rules["reserve"], f"{where}: reserves {data['reserved']}")
                want = stake * rules["reserve"] if banker else 0
                _require(data["banker_reserved"] == want, f"{where}: the banker reserves {data['banker_reserved']}")
                reserved[data["player"]] = reserved.get(data["player"], 0) + data["reserved"]
                banker_reserved += data["banker_reserved"]
                _require(
                    (data["seat"], data["player"]) not in stakes, f"{where}: a second stake of one wallet on a seat"
                )
                stakes[(data["seat"], data["player"])] = stake
            elif event["kind"] == "side_bet_placed":
                _require(
                    data["stake"] == data["reserved"] == stakes[(data["seat"], data["player"])],
                    f"{where}: a side bet equals its main stake and reserves it",
                )
                reserved[data["player"]] = reserved.get(data["player"], 0) + data["reserved"]
            elif event["kind"] == "side_bets_settled":
                dealt = self.first("cards_dealt")
                assert dealt is not None
                two = [c for seat, c in dealt["data"]["cards"] if seat == 0]
                natural = taem(two) >= 8
                _require(data["natural"] == natural, f"{where}: natural is {natural}")
                for _seat, player, stake, net in data["results"]:
                    want = stake * rules["side_bet"].numerator // rules["side_bet"].denominator if natural else -stake
                    _require(net == want, f"{where}: the side bet of {player} nets {net}, not {want}")
                    nets[player] = nets.get(player, 0) + net
                    banker_sum -= net
            elif event["kind"] == "bet_settled":
                self._stake_arithmetic(rules, data, where)
                nets[data["player"]] = nets.get(data["player"], 0) + data["net"]
                banker_sum -= data["net"] + data["commission"]
                player_commission += data["commission"]
        settled, voided = self.first("round_settled"), self.first("round_voided")
        paid = [(e["data"]["seat"], e["data"]["player"]) for e in self.all("bet_settled")]
        _require(len(paid) == len(set(paid)) and set(paid) <= set(stakes), "a stake settled twice, or one not placed")
        _require(voided is not None or set(paid) == set(stakes), "a stake of the round was never settled")
        if voided is not None:
            want_released = [[p, r] for p, r in reserved.items()] + (
                [[banker, banker_reserved]] if banker_reserved else []
            )
            _require(
                [list(w) for w in voided["data"]["wallets"]] == want_released,
                "the void does not release every reservation",
            )
            return f"voided: {len(want_released)} reservation(s) released, no money moved"
        assert settled is not None
        data = settled["data"]
        owed = 0
        rate = rules.get("banker_commission")
        if banker and rate and banker_sum > 0:
            owed = -(-banker_sum * rate.numerator // rate.denominator)  # rounded up, on the round's net
        wallets = [[p, r, nets.get(p, 0)] for p, r in reserved.items()]
        if banker:
            wallets.append([banker, banker_reserved, banker_sum - owed])
        house = 0 if banker else banker_sum
        _require([list(w) for w in data["wallets"]] == wallets, f"round_settled's wallets, not {wallets}")
        _require(
            data["banker_net_before_commission"] == banker_sum, f"the banker's net before commission is {banker_sum}"
        )
        _require(data["banker_commission"] == owed, f"the banker's commission is {owed}")
        _require(data["commission"] == player_commission + owed, f"the commission is {player_commission + owed}")
        _require(data["house_net"] == house, f"the house net is {house}")
        total = sum(w[2] for w in wallets) + house + data["commission"]
        _require(total == 0, f"wallets + house + commission = {total}")
        return (
            f"every stake's payout, commission and net; wallets {sum(w[2] for w in wallets)} + house {house} + "
            f"commission {data['commission']} = 0"
        )

    @staticmethod
    def _stake_arithmetic(rules: dict[str, Any], data: dict[str, Any], where: str) -> None:
        m = Fraction(data["multiplier"])
        stake, gross, commission, net, outcome = (data[k] for k in ("stake", "gross", "commission", "net", "outcome"))
        _require(m >= 0 and str(m) == data["multiplier"], f"{where}: multiplier {data['multiplier']!r}")
        _require(gross == stake * m.numerator // m.denominator, f"{where}: gross {gross} is not floor({stake} x {m})")
        if outcome == "player_wins":
            rate = rules.get("player_commission", Fraction(0))
            want = -(-gross * rate.numerator // rate.denominator)
            _require(commission == want, f"{where}: commission {commission} is not ceil({gross} x {rate}) = {want}")
            _require(net == gross - commission, f"{where}: net {net} is not gross - commission")
        elif outcome == "banker_wins":
            _require(commission == 0 and net == -gross, f"{where}: a lost stake nets -gross, with no commission")
        else:
            _require(outcome == "tie" and gross == commission == net == 0, f"{where}: a tie moves nothing")
        if rules["comparison"] == "ante":
            _require(net == data["ante_net"] + data["bet_net"], f"{where}: net is not ante_net + bet_net")
            _require(
                {abs(data["ante_net"]), abs(data["bet_net"])} <= {0, stake // 2}, f"{where}: ante and bet are halves"
            )
        else:
            _require(data["ante_net"] is None and data["bet_net"] is None, f"{where}: ante_net and bet_net are null")

    # -- 3. what the bundle restates -----------------------------------------------------

    def copies(self) -> str:
        """Every field the bundle restates, computed again from its events alone and compared whole, byte
        for byte in canonical JSON: nothing in them can differ from the events, nor ride along."""
        for event in self.events:
            _require(
                stored_time(event["timestamp"]),
                f"event {event['position']}: time {event['timestamp']!r} is not as stored",
            )
        again = self._restated()
        differ = [
            _difference(k, v, self.bundle.get(k))
            for k, v in again.items()
            if canonical(v) != canonical(self.bundle.get(k))
        ]
        _require(not differ, f"not what the events say: {'; '.join(differ)}")
        return (
            f"table, round number, profile, engine, shuffle, {len(again['decisions'])} decisions, payouts, "
            "settlement, times and chain: each what the events say"
        )

    def _restated(self) -> dict[str, Any]:
        """§ Round bundle: what the bundle restates, from the events alone (the table of fields, and Decisions)."""
        opened, rules = self.opening, self.rules
        committed = self.first("shuffle_committed")
        _require(committed is not None, "no shuffle_committed")
        assert committed is not None
        contributing, fixed, revealed = (
            self.first(k) for k in ("contributions_opened", "client_seed_fixed", "seed_revealed")
        )
        client_seed = (fixed or committed)["data"]["client_seed"]
        server_seed = revealed["data"]["server_seed"] if revealed is not None else ""
        nonce = committed["data"]["nonce"]
        deck = []  # a seed revealed and a client seed fixed (at the deal, or given with the commitment): the shoe
        if revealed is not None and (fixed is not None or contributing is None):
            deck = shuffle(bytes.fromhex(server_seed), client_seed, nonce, rules["decks"])
        shuffled: dict[str, Any] = {
            "algorithm": "pokdeng-shuffle-v1",
            "commitment": committed["data"]["commitment"],
            "server_seed": server_seed,
            "client_seed": client_seed,
            "nonce": nonce,
            "decks": rules["decks"],
            "deck_order": deck,
        }
        if contributing is not None:  # as fixed at the deal, else each contributor's last, by the UTF-8 bytes of its id
            latest: dict[str, str] = {}
            for event in self.all("client_seed_contributed"):
                latest[event["data"]["contributor"]] = event["data"]["client_seed"]
            last = [[c, seed] for c, seed in sorted(latest.items(), key=lambda pair: pair[0].encode("utf-8"))]
            shuffled["client_seed_rule"] = contributing["data"]["rule"]
            shuffled["contributions"] = fixed["data"]["contributions"] if fixed is not None else last
        settled = self.first("round_settled")
        return {
            "table_id": opened["table_id"],
            "round_no": opened["round_no"],
            "profile": {"name": opened["profile_name"], "version": opened["profile_version"], "options": self.options},
            "engine_version": opened["engine_version"],
            "shuffle": shuffled,
            "decisions": [self._decision(group) for group in self._groups()],
            "payouts": [e["data"] for e in self.all("bet_settled")],
            "settlement": settled["data"] if settled is not None else None,
            "times": {"opened": self.events[0]["timestamp"], "closed": self.events[-1]["timestamp"]},
            "chain": {
                "version": CHAIN_VERSION,
                "genesis": genesis(self.bundle["round_id"]),
                "last": self.events[-1]["digest"],
            },
        }

    def _decision(self, group: list[dict[str, Any]]) -> dict[str, Any]:
        """§ Round bundle, Decisions: the command a group of events records, with exactly its fields."""
        head, name = group[0], self._command_of(group)
        kind, data = head["kind"], head["data"]
        by = data.get("by", "")
        fields: dict[str, Any] = {}
        if kind == "round_opened":
            rest = group[1:]
            rule = rest.pop(0)["data"]["rule"] if rest and rest[0]["kind"] == "contributions_opened" else ""
            _require(bool(rest) and rest[0]["kind"] == "shuffle_committed", f"event {head['position']}: no commitment")
            committed = rest[0]["data"]
            client_seed = committed["client_seed"]
            if rule:  # the platform's contribution right after the commitment, if any
                after: dict[str, Any] = rest[1] if len(rest) > 1 else {"kind": "", "data": {}}
                platform = after["kind"] == "client_seed_contributed" and after["data"]["contributor"] == ""
                client_seed = after["data"]["client_seed"] if platform else ""
            options = "".join(f"+{option}" for option, on in sorted(data["profile_options"]) if on)
            fields = {
                k: data[k]
                for k in ("round_id", "table_id", "round_no", "seats", "banker_player", "min_stake", "max_stake")
            }
            fields["profile"] = f"{data['profile_name']}@{data['profile_version']}{options}"
            fields |= {k: committed[k] for k in ("commitment", "nonce", "algorithm")} | {"client_seed": client_seed}
            if rule:
                fields["client_seed_rule"] = rule
            if data.get("currency", "THB") != "THB":
                fields["currency"] = data["currency"]
        else:
            opened = self.opening
            banker, holders = opened["banker_player"], {seat: holder for seat, holder in opened["seats"]}
            if kind == "bet_placed":
                fields = {"seat": data["seat"], "player": data["player"], "stake": data["stake"]}
                fields |= {
                    "available": data["reserved"],
                    "banker_available": data["banker_reserved"] if banker else None,
                }
                contributed = group[1] if len(group) > 1 else None
                if (
                    contributed is not None
                    and contributed["kind"] == "client_seed_contributed"
                    and contributed["data"]["contributor"] == data["player"]
                ):
                    fields["client_seed"] = contributed["data"]["client_seed"]
            elif kind == "client_seed_contributed":
                fields = {"player": data["contributor"] or None, "client_seed": data["client_seed"]}
            elif kind == "client_seed_fixed":  # the deal of a round with contributions: its sender on its cards_dealt
                dealt = next((e for e in group[1:] if e["kind"] == "cards_dealt"), None)
                by = dealt["data"].get("by", "") if dealt is not None else ""
            elif kind in ("card_drawn", "player_stood"):
                seat = data["seat"]
                fields = {"player": banker} if seat == 0 else {"seat": seat, "player": holders[seat] or ""}
            elif kind == "side_bet_placed":
                fields = {"seat": data["seat"], "player": data["player"], "available": data["reserved"]}
            elif kind == "round_voided":
                fields = {"reason": data["reason"]}
            elif kind == "hands_revealed":  # (selective: a banker_reveal)
                fields = {"seats": data["seats"], "player": banker}
        if by:
            fields["by"] = by
        return {"command": name, "name": name, **fields}

    def _groups(self) -> list[list[dict[str, Any]]]:
        groups: list[list[dict[str, Any]]] = []
        for event in self.events:
            if groups and groups[-1][0]["command_id"] == event["command_id"]:
                groups[-1].append(event)
            else:
                groups.append([event])
        return groups

    @staticmethod
    def _command_of(group: list[dict[str, Any]]) -> str:
        kind, data = group[0]["kind"], group[0]["data"]
        if kind in ("card_drawn", "player_stood"):
            return ("banker_" if data["seat"] == 0 else "") + ("draw" if kind == "card_drawn" else "stay")
        if kind == "hands_revealed" and data["selective"]:
            return "banker_reveal"
        names = {
            "round_opened": "open_round",
            "bet_placed": "place_bet",
            "client_seed_contributed": "contribute_seed",
            "client_seed_fixed": "deal",
            "cards_dealt": "deal",
            "side_bet_placed": "place_side_bet",
            "side_bets_settled": "close_side_bets",
            "turn_timed_out": "time_out_turn",
            "round_voided": "void_round",
        }
        _require(kind in names, f"event {group[0]['position']} ({kind}) starts no command")
        return names[kind]

    def balances(self) -> str:
        """§ Round bundle, `balances` and `made_for`: each listed wallet once, with its settlement net and
        `after - before = net` (or both null: the platform's wallets); made for the operator or an auditor, every
        wallet of the settlement in its order; made for `player:X` (a seat's holder, a bettor or the banker of the
        round), X's alone (none if X has no net). A version 1 bundle says nothing of whom it was made for."""
        settled = self.first("round_settled")
        wallets = [(p, n) for p, _r, n in settled["data"]["wallets"]] if settled else []
        nets = dict(wallets)
        seen = set()
        for entry in self.bundle["balances"]:
            wallet, before, after = entry["wallet"], entry["before"], entry["after"]
            _require(wallet in nets and wallet not in seen, f"wallet {wallet!r} has no (single) net in the settlement")
            _require(
                entry["net"] == nets[wallet] and (before is None) == (after is None),
                f"wallet {wallet}: net {entry['net']}, the settlement's is {nets[wallet]}",
            )
            _require(before is None or after - before == entry["net"], f"wallet {wallet}: after - before != net")
            seen.add(wallet)
        nulls = {entry["before"] is None for entry in self.bundle["balances"]}
        _require(len(nulls) <= 1, "some balances are null and others not")
        listed = [entry["wallet"] for entry in self.bundle["balances"]]
        if self.bundle["format_version"] == 1:
            return f"{len(seen)} wallet(s): after = before + the round's net (version 1: made for anyone)"
        made_for = self.bundle["made_for"]
        if made_for.startswith("player:"):
            player = made_for[len("player:") :]
            opened = self.opening
            people = {holder for _seat, holder in opened["seats"] if holder} | {opened["banker_player"]}
            people |= {e["data"]["player"] for e in self.all("bet_placed") + self.all("side_bet_placed")}
            _require(player in people, f"made for player {player!r}, who takes no part in the round")
            expected = [player] if player in nets else []
        else:
            expected = [wallet for wallet, _net in wallets]
        _require(listed == expected, f"made for {made_for}: balances of {listed}, the settlement gives {expected}")
        return f"made for {made_for}: {len(seen)} wallet(s), each after = before + the round's net"

    def platform_transactions(self) -> str:
        """§ Round bundle, `platform_transactions` (a round on a platform's wallets, docs/wallet.md), in order: each
        transaction's fields, its id the deterministic one (`<round>:<purpose>:<seat>:<bettor>:<n>`, n its stake's
        earlier debits in the list; `<round>:credit:<player>`), the round's currency, of the bundle's audience;
        each wallet's accepted debits sum to what the round reserves for it; a settled round credits each wallet
        reserved + net, settling exactly its accepted debits, and nobody else, and rolls back no placed stake; a
        voided round credits nobody and rolls back every accepted debit; nothing is left open."""
        round_id, txs = self.bundle["round_id"], self.bundle["platform_transactions"]
        opened = self.opening
        currency, banker = opened.get("currency", "THB"), opened["banker_player"]
        closed = self.first("round_closed")
        outcome = closed["data"]["outcome"] if closed else ""
        _require(outcome in ("settled", "voided"), f"the round is not closed settled or voided ({outcome})")
        reserved: dict[str, int] = {}
        nets: dict[str, int] = {}
        settled, voided = self.first("round_settled"), self.first("round_voided")
        if settled:
            reserved = {p: held for p, held, _net in settled["data"]["wallets"]}
            nets = {p: net for p, _held, net in settled["data"]["wallets"]}
        elif voided:
            reserved = {p: held for p, held in voided["data"]["wallets"]}
        made_for = self.bundle["made_for"]
        player = made_for[len("player:") :] if made_for.startswith("player:") else None
        ids: set[str] = set()
        attempts: dict[tuple[str, int, str], int] = {}
        accepted: dict[str, list[str]] = {}
        for i, tx in enumerate(txs):
            tx_id, kind, who, status = tx["tx_id"], tx["kind"], tx["player"], tx["status"]
            where = f"transaction {i} ({tx_id})"
            _require(tx_id not in ids, f"{where}: its id appears twice")
            ids.add(tx_id)
            _require(tx["amount"] >= 0, f"{where}: a negative amount")
            _require(tx["currency"] == currency, f"{where}: currency {tx['currency']}, the round's is {currency}")
            _require(player is None or who == player, f"{where}: of {who!r}, in a bundle made for {made_for}")
            if kind == "debit":
                purpose, seat, bettor = tx["purpose"], tx["seat"], tx["bettor"]
                _require(
                    purpose in ("bet", "cover", "side")
                    and seat is not None
                    and bettor is not None
                    and not tx["debits"],
                    f"{where}: a debit is of purpose bet, cover or side, with a seat and a bettor, no debits",
                )
                n = attempts.get((purpose, seat, bettor), 0)
                attempts[(purpose, seat, bettor)] = n + 1
                want = f"{round_id}:{purpose}:{seat}:{bettor}:{n}"
                _require(tx_id == want, f"{where}: not the deterministic id {want}")
                owner = banker if purpose == "cover" else bettor
                _require(who == owner, f"{where}: a {purpose} debit of {who!r}, where the stake's is {owner!r}")
                _require(
                    status in ("requested", "accepted", "refused", "rollback_requested", "rolled_back"),
                    f"{where}: status {status!r} is not a debit's",
                )
                undone = status in ("rollback_requested", "rolled_back")
                _require(undone or tx["accepted"] == (status == "accepted"), f"{where}: accepted with status {status}")
                if tx["accepted"]:
                    accepted.setdefault(who, []).append(tx_id)
            else:
                _require(kind == "credit", f"{where}: kind {kind!r} is neither debit nor credit")
                _require(
                    tx["purpose"] == "credit" and tx["seat"] is None and tx["bettor"] is None and not tx["accepted"],
                    f"{where}: a credit is of purpose credit, with no seat, no bettor, not accepted",
                )
                _require(tx_id == f"{round_id}:credit:{who}", f"{where}: not the deterministic id")
                _require(status in ("requested", "applied", "refused"), f"{where}: status {status!r} is not a credit's")
        audience = [p for p, held in reserved.items() if held and (player is None or p == player)]
        placed = {p: sum(t["amount"] for t in txs if t["kind"] == "debit" and t["accepted"] and t["player"] == p)
                  for p in accepted}  # fmt: skip
        wanted = {p: reserved[p] for p in audience}
        _require(placed == wanted, f"the accepted debits {placed} are not the round's stakes {wanted}")
        credits = {t["player"]: t for t in txs if t["kind"] == "credit"}
        rolled = [t for t in txs if t["kind"] == "debit" and t["accepted"]]
        if outcome == "settled":
            for p in audience:
                credit = credits.pop(p, None)
                pays = reserved[p] + nets.get(p, 0)
                _require(credit is not None and credit["amount"] == pays, f"{p}: no credit of reserved + net = {pays}")
                assert credit is not None
                mine = accepted.get(p, [])
                _require(credit["debits"] == mine, f"the credit to {p} settles other debits than its own, in order")
            _require(not credits, f"credits to {sorted(credits)}, whom the settlement does not pay")
            _require(all(t["status"] == "accepted" for t in rolled), "a settled round rolls back a placed stake")
        else:
            _require(not credits, f"credits to {sorted(credits)} in a voided round")
            kept = [t["tx_id"] for t in rolled if t["status"] not in ("rollback_requested", "rolled_back")]
            _require(not kept, f"the void leaves debits {kept} in force")
        for t in txs:
            unfinished = t["status"] in ("requested", "rollback_requested") or (
                t["kind"] == "credit" and t["status"] == "refused"
            )
            _require(not unfinished or t["resolved"], f"transaction {t['tx_id']} is {t['status']} in a closed round")
            _require(not t["resolved"] or unfinished, f"transaction {t['tx_id']} is {t['status']}: nothing to resolve")
        debits = sum(1 for t in txs if t["kind"] == "debit")
        return f"{debits} debits and {len(txs) - debits} credits of {made_for}: as the round's stakes and {outcome}"

    # -- 4. proofs -----------------------------------------------------------------------

    def inclusion(self) -> str:
        proof = self.bundle["inclusion"]
        leaf = leaf_hash(self.bundle["round_id"], self.bundle["chain"]["last"])
        self.say(f"checkpoint leaf: {leaf.hex()}")
        _require(leaf.hex() == proof["leaf"], "the leaf is not the hash of the round id and its last digest")
        _require(proof["table_id"] == self.bundle["table_id"], "a checkpoint of another table")
        trace: list[str] = []
        root = root_from_inclusion(
            leaf, proof["index"], proof["size"], [bytes.fromhex(h) for h in proof["path"]], trace
        )
        for step in trace:
            self.say(f"checkpoint path: {step}")
        _require(root is not None and root.hex() == proof["root"], "the path does not lead to the checkpoint's root")
        return f"leaf {proof['index']} of {proof['size']} under root {proof['root']}"

    def anchor(self, verdict: Verdict) -> None:
        anchor = self.bundle.get("log")
        if anchor is None:
            text = "unanchored: no signed tree head covers this round"
            if self.keys:
                verdict.add("anchor", False, text)
            else:
                verdict.leave_unanchored(text)
            return

        def included() -> str:
            head = anchor["head"]
            _require(head["format"] == "pokdeng-signed-tree-head" and head["format_version"] == 1, "not a tree head")
            leaf = leaf_hash(self.bundle["round_id"], self.bundle["chain"]["last"])
            self.say(
                f"log leaf: SHA-256(0x00 || {self.bundle['round_id'].encode().hex()} || 00 || "
                f"{self.bundle['chain']['last']}) = {leaf.hex()}"
            )
            _require(leaf.hex() == anchor["leaf"], "the leaf is not the hash of the round id and its last digest")
            trace: list[str] = []
            path = [bytes.fromhex(h) for h in anchor["path"]]
            root = root_from_inclusion(leaf, anchor["index"], head["tree_size"], path, trace)
            for step in trace:
                self.say(f"log path: {step}")
            _require(root is not None and root.hex() == head["root_hash"], "the path does not lead to the head's root")
            return f"leaf {anchor['index']} of {head['tree_size']} under root {head['root_hash']}"

        if not _check(verdict, "log inclusion", included):
            return

        def signed() -> str:
            head = anchor["head"]
            message = head_signed_bytes(head)
            self.say(f"signed bytes ({len(message)}): {message.hex()}")
            self.say(f"  context {message[:21].hex()} | log id {message[21 : 22 + message[21]].hex()}")
            rest = message[22 + message[21] :]
            self.say(f"  key id {rest[: 1 + rest[0]].hex()} | timestamp {rest[1 + rest[0] : 9 + rest[0]].hex()}")
            self.say(f"  tree size {rest[9 + rest[0] : 17 + rest[0]].hex()} | root {rest[17 + rest[0] :].hex()}")
            public = self.keys.get(head["key_id"])
            _require(public is not None, f"signed by key {head['key_id']}, not among the keys given")
            assert public is not None
            try:
                Ed25519PublicKey.from_public_bytes(public).verify(bytes.fromhex(head["signature"]), message)
            except (InvalidSignature, ValueError):
                raise Failed(f"the signature does not verify with key {head['key_id']}") from None
            return f"Ed25519 signature of key {head['key_id']}: log {head['log_id']}, size {head['tree_size']}"

        if self.keys:
            for ident, public in self.keys.items():
                self.say(f"key {ident}: the first 8 bytes of SHA-256 of the public key {public.hex()}")
            _check(verdict, "anchor", signed)
        else:
            head = anchor["head"]
            self.say(f"signed bytes: {head_signed_bytes(head).hex()}")
            verdict.leave_unanchored(f"unanchored: the signature of key {head['key_id']} was not checked (give --key)")


def _difference(name: str, mine: Any, theirs: Any) -> str:
    """A restated field that differs: of a list its first differing element, of an object its members."""
    if isinstance(mine, list) and isinstance(theirs, list):
        at = next((i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if canonical(a) != canonical(b)), None)
        return f"{name}[{at}]" if at is not None else f"{name} ({len(theirs)} where the events give {len(mine)})"
    if isinstance(mine, dict) and isinstance(theirs, dict):
        keys = [k for k in sorted({*mine, *theirs}) if canonical(mine.get(k)) != canonical(theirs.get(k))]
        return f"{name} ({', '.join(k if k in mine else k + ': a member the events do not give' for k in keys)})"
    return name


def read_keys(values: Sequence[str]) -> dict[str, bytes]:
    """Public keys by key id, from 64 hex digits or files of ``[KEY_ID] PUBLIC_KEY`` lines."""
    keys: dict[str, bytes] = {}
    for value in values:
        lines = [value] if re.fullmatch(r"[0-9a-fA-F]{64}", value) else Path(value).read_text().splitlines()
        for line in lines:
            words = line.split("#", 1)[0].split()
            if words:
                raw = bytes.fromhex(words[-1])
                if len(raw) != 32:
                    raise ValueError(f"not an Ed25519 public key: {words[-1]}")
                keys[key_id(raw)] = raw
    return keys


def verify(raw: bytes, keys: dict[str, bytes] | None = None, explain: Callable[[str], None] | None = None) -> Verdict:
    return BundleCheck(raw, keys or {}, explain or (lambda _text: None)).run()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Verify a pokdeng round bundle from the docs alone.")
    parser.add_argument("bundle", help="a bundle file (pokdeng export)")
    parser.add_argument("--key", action="append", default=[], help="an Ed25519 public key (hex) or a file of keys")
    parser.add_argument("--explain", action="store_true", help="print every value the checks compute")
    parser.add_argument(
        "--allow-unanchored", action="store_true", help="exit 0, not 5, when nothing anchors a bundle that passes"
    )
    args = parser.parse_args(argv)
    try:
        raw = Path(args.bundle).read_bytes()
        keys = read_keys(args.key)
    except (OSError, ValueError) as error:
        print(f"cannot read: {error}", file=sys.stderr)
        return 2
    verdict = verify(raw, keys, print if args.explain else None)
    print(verdict.render())
    return {"PASS": 0, "FAIL": 1, "UNANCHORED": 0 if args.allow_unanchored else 5}[verdict.status]


if __name__ == "__main__":
    sys.exit(main())
