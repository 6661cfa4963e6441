"""The documented form of a round's record and of its bundle: the type of every member, the grammars of
the texts that have one (a sender, an engine version, a currency, whom a bundle was made for), and the
rules of who sends what (docs/audit.md, "Types" and "Senders"; docs/events.md).

A *type* is written as docs/audit.md writes it:

* ``"int"``: a JSON integer (no fraction, no exponent; not ``true`` or ``false``), −2^53 < n < 2^53;
* ``"text"``, ``"bool"``; ``"hex64"``, ``"hex128"``, ``"hex16"``: text of that many lowercase hex digits;
* ``"sender"``, ``"version"``, ``"currency"``, ``"recipient"``: text of that grammar (below);
* a name ending in ``?``: that type or ``null``;
* a tuple: an array of exactly those elements; a one-element list ``[T]``: an array of ``T``;
* a dict: an object with exactly those members (``None`` as a member's type: any value, checked elsewhere).

Nothing here reads a store or the library: ``pokdeng verify BUNDLE`` loads it with the offline verifier.
"""

from __future__ import annotations

import re as regex
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

SAFE_INTEGER = 2**53
"""Integers of the canonical domain lie strictly between −2^53 and 2^53 (docs/audit.md, "Canonical JSON")."""

_HEX = {"hex16": regex.compile(r"[0-9a-f]{16}"), "hex64": regex.compile(r"[0-9a-f]{64}")}
_HEX["hex128"] = regex.compile(r"[0-9a-f]{128}")
_VERSION = regex.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")
_CURRENCY = regex.compile(r"[A-Z]{3}")


def sender_ok(text: object) -> bool:
    """A sender (``by``): ``""`` (none named: the event's own player, or an automatic event), ``operator``
    (an operator token without a name), ``operator:NAME`` (a named operator token) or ``service:NAME`` (the
    service itself: ``service:system``, ``service:turn-clock``); NAME is one character or more."""
    if not isinstance(text, str):
        return False
    if text in ("", "operator"):
        return True
    return any(text.startswith(prefix) and len(text) > len(prefix) for prefix in ("operator:", "service:"))


def version_ok(text: object) -> bool:
    """An engine version: three numbers in ASCII digits joined by dots, no leading zero (``1.1.0``)."""
    return isinstance(text, str) and _VERSION.fullmatch(text) is not None


def currency_ok(text: object) -> bool:
    """A currency: an ISO 4217 alphabetic code, three capital ASCII letters (``THB``)."""
    return isinstance(text, str) and _CURRENCY.fullmatch(text) is not None


RECIPIENTS = ("operator", "auditor")
"""Whom a bundle can be made for besides a player (``player:<wallet id>``)."""


def recipient_ok(text: object) -> bool:
    """Whom a bundle was made for (``made_for``): ``operator``, ``auditor``, or ``player:`` and the player's
    wallet id (one character or more)."""
    return isinstance(text, str) and (text in RECIPIENTS or (text.startswith("player:") and len(text) > 7))


_GRAMMARS = {"sender": sender_ok, "version": version_ok, "currency": currency_ok, "recipient": recipient_ok}


def _named(name: str, value: Any) -> bool:
    if name == "int":
        return type(value) is int and -SAFE_INTEGER < value < SAFE_INTEGER
    if name == "text":
        return isinstance(value, str)
    if name == "bool":
        return type(value) is bool
    if name in _HEX:
        return isinstance(value, str) and _HEX[name].fullmatch(value) is not None
    return _GRAMMARS[name](value)


def type_problem(value: Any, spec: Any, where: str) -> str | None:
    """What makes ``value`` not of type ``spec`` (the module's types), or None; ``where`` names it."""
    if spec is None:
        return None
    if isinstance(spec, str):
        if spec.endswith("?"):
            return None if value is None else type_problem(value, spec[:-1], where)
        return None if _named(spec, value) else f"{where}: {_shown(value)} is not {_article(spec)}"
    if isinstance(spec, tuple):
        if not isinstance(value, list) or len(value) != len(spec):
            return f"{where}: {_shown(value)} is not an array of {len(spec)}"
        for i, (item, item_spec) in enumerate(zip(value, spec, strict=True)):
            problem = type_problem(item, item_spec, f"{where}[{i}]")
            if problem is not None:
                return problem
        return None
    if isinstance(spec, list):
        if not isinstance(value, list):
            return f"{where}: {_shown(value)} is not an array"
        for i, item in enumerate(value):
            problem = type_problem(item, spec[0], f"{where}[{i}]")
            if problem is not None:
                return problem
        return None
    return members_problem(value, spec, where)


def members_problem(
    value: Any, spec: Mapping[str, Any], where: str, optional: frozenset[str] = frozenset()
) -> str | None:
    """``value`` is an object with exactly the members of ``spec`` (those of ``optional`` may be absent), each
    of its type; or what is wrong."""
    if not isinstance(value, dict):
        return f"{where}: {_shown(value)} is not an object"
    unknown, missing = set(value) - set(spec), set(spec) - set(value) - optional
    if unknown:
        return f"{where}: members {sorted(unknown)} it does not have"
    if missing:
        return f"{where}: without {sorted(missing)}"
    for name, member in spec.items():
        if name in value:
            problem = type_problem(value[name], member, f"{where}.{name}")
            if problem is not None:
                return problem
    return None


def _article(name: str) -> str:
    words = {
        "int": "an integer (|n| < 2^53)",
        "text": "text",
        "bool": "true or false",
        "hex16": "16 lowercase hex digits",
        "hex64": "64 lowercase hex digits",
        "hex128": "128 lowercase hex digits",
        "sender": "a sender ('', operator, operator:NAME or service:NAME)",
        "version": "a version N.N.N",
        "currency": "a currency (three capital letters)",
        "recipient": "operator, auditor or player:ID",
    }
    return words[name]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# ---------------------------------------------------------------------------------------
# the round's events (docs/events.md, "Round stream"; docs/audit.md, "Types")

EVENT_DATA_TYPES: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {
        "round_opened": {
            "round_id": "text", "table_id": "text", "round_no": "int", "profile_name": "text",
            "profile_version": "int", "profile_options": [("text", "bool")], "engine_version": "version",
            "banker_player": "text?", "seats": [("int", "text?")], "min_stake": "int", "max_stake": "int",
            "currency": "currency", "by": "sender",
        },
        "contributions_opened": {"rule": "text"},
        "shuffle_committed": {
            "commitment": "hex64", "client_seed": "text", "nonce": "int", "algorithm": "text", "shoe_size": "int",
        },
        "client_seed_contributed": {"contributor": "text", "client_seed": "text", "by": "sender"},
        "client_seed_fixed": {"client_seed": "hex64", "rule": "text", "contributions": [("text", "text")]},
        "bet_placed": {
            "seat": "int", "player": "text", "stake": "int", "reserved": "int", "banker_reserved": "int",
            "by": "sender",
        },
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
    }
)  # fmt: skip
"""Each round event kind's ``data``: exactly these members, of these types."""

ADDED_DATA: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        kind: frozenset({"currency", "by"} if kind == "round_opened" else {"by"})
        for kind, members in EVENT_DATA_TYPES.items()
        if "by" in members
    }
)
"""The members a record made before they were added may lack (read as ``""``, and ``THB``)."""


# ---------------------------------------------------------------------------------------
# the bundle (docs/audit.md, "Round bundle")

EVENT_TYPES = MappingProxyType(
    {"position": "int", "kind": "text", "data": None, "command_id": "text", "timestamp": "text", "digest": "hex64"}
)
"""A bundle's event (its ``data`` by ``EVENT_DATA_TYPES``)."""
BALANCE_TYPES = MappingProxyType({"wallet": "text", "before": "int?", "after": "int?", "net": "int"})
HEAD_TYPES = MappingProxyType(
    {
        "format": "text", "format_version": "int", "log_id": "text", "key_id": "hex16", "tree_size": "int",
        "root_hash": "hex64", "timestamp": "int", "signature": "hex128",
    }
)  # fmt: skip
LOG_TYPES = MappingProxyType({"index": "int", "leaf": "hex64", "path": ["hex64"], "head": HEAD_TYPES})
INCLUSION_TYPES = MappingProxyType(
    {"table_id": "text", "root": "hex64", "size": "int", "index": "int", "leaf": "hex64", "path": ["hex64"]}
)
"""A table checkpoint's proof in a bundle of version 2."""
INCLUSION_TYPES_V1 = MappingProxyType(
    {**INCLUSION_TYPES, "period": "text", "checkpoint_position": "int", "checkpoint_digest": "hex64"}
)
"""Version 1 also named the checkpoint (its period, and its event's position and digest on the table's stream):
nothing offline can check those, and version 2 leaves them out."""

TX_TYPES = MappingProxyType(
    {
        "tx_id": "text", "kind": "text", "player": "text", "amount": "int", "currency": "currency",
        "purpose": "text", "seat": "int?", "bettor": "text?", "status": "text", "accepted": "bool",
        "debits": ["text"], "resolved": "text",
    }
)  # fmt: skip
"""One transaction of ``platform_transactions``: a platform-wallet round's outbox in its bundle (``platform_txs``)."""

_RESTATED = None  # a member compared whole with what the events give (the copies check): any JSON value here
BUNDLE_TYPES: Mapping[int, Mapping[str, Any]] = MappingProxyType(
    {
        2: {
            "format": "text", "format_version": "int", "made_for": "recipient", "round_id": "text",
            "table_id": "text", "round_no": "int", "profile": _RESTATED, "engine_version": "version",
            "shuffle": _RESTATED, "decisions": _RESTATED, "payouts": _RESTATED, "settlement": _RESTATED,
            "balances": [dict(BALANCE_TYPES)], "platform_transactions": [dict(TX_TYPES)], "times": _RESTATED,
            "events": [dict(EVENT_TYPES)], "chain": _RESTATED, "inclusion": None, "log": None,
            "bundle_digest": "hex64",
        },
        1: {
            "format": "text", "format_version": "int", "round_id": "text", "table_id": "text", "round_no": "int",
            "profile": _RESTATED, "engine_version": "version", "shuffle": _RESTATED, "decisions": _RESTATED,
            "payouts": _RESTATED, "settlement": _RESTATED, "balances": [dict(BALANCE_TYPES)], "times": _RESTATED,
            "events": [dict(EVENT_TYPES)], "chain": _RESTATED, "inclusion": None, "log": None,
            "bundle_digest": "hex64",
        },
    }
)  # fmt: skip
"""A bundle's members by its ``format_version`` (``inclusion`` and ``log`` are null or as below)."""
OPTIONAL_MEMBERS: Mapping[int, frozenset[str]] = MappingProxyType(
    {2: frozenset({"platform_transactions"}), 1: frozenset({"inclusion", "log"})}
)
"""Members a bundle of that version may lack: version 1's bundles made before the checkpoint and the log; version
2's ``platform_transactions``, present exactly when the round's money is a platform's (absent from such bundles made
before it was added)."""


def bundle_types_problem(bundle: Any) -> str | None:
    """What is not of the documented types in a bundle (``BUNDLE_TYPES`` of its version, each event's data
    by ``EVENT_DATA_TYPES``), or None. The members it restates from its events (``profile``, ``shuffle``,
    ``decisions``, ``payouts``, ``settlement``, ``times``, ``chain``) are compared whole by the copies check."""
    if not isinstance(bundle, dict):
        return "not an object"
    version = bundle.get("format_version")
    if type(version) is not int or version not in BUNDLE_TYPES:
        return f"format_version {version!r}: this verifier reads versions {sorted(BUNDLE_TYPES)}"
    problem = members_problem(bundle, BUNDLE_TYPES[version], "bundle", OPTIONAL_MEMBERS[version])
    if problem is not None:
        return problem
    for i, event in enumerate(bundle["events"]):
        kind = event["kind"]
        if kind not in EVENT_DATA_TYPES:
            return f"events[{i}]: kind {kind!r} is not a round event's"
        where = f"event {event['position']} ({kind}) data"
        problem = members_problem(event["data"], EVENT_DATA_TYPES[kind], where, ADDED_DATA.get(kind, frozenset()))
        if problem is not None:
            return problem
    inclusion, log = bundle.get("inclusion"), bundle.get("log")
    if inclusion is not None:
        problem = members_problem(inclusion, INCLUSION_TYPES if version >= 2 else INCLUSION_TYPES_V1, "inclusion")
        if problem is not None:
            return problem
    return None if log is None else members_problem(log, LOG_TYPES, "log")


def domain_problem(value: Any, where: str = "bundle") -> str | None:
    """What lies outside the canonical JSON domain (docs/audit.md): a number that is not an integer, an integer
    of magnitude 2^53 or more, text with a lone surrogate; or None."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, bool) or item is None:
            continue
        if isinstance(item, int):
            if not -SAFE_INTEGER < item < SAFE_INTEGER:
                return f"{at}: the integer {item} is outside the canonical domain (|n| < 2^53)"
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return f"{at}: text with a lone surrogate"
        elif isinstance(item, list):
            stack.extend((x, f"{at}[{i}]") for i, x in enumerate(item))
        elif isinstance(item, dict):
            for key, x in item.items():
                problem = domain_problem(key, f"{at} (a key)")
                if problem is not None:
                    return problem
                stack.append((x, f"{at}.{key}"))
        else:
            return f"{at}: {type(item).__name__} is not of the canonical domain (numbers are integers)"
    return None
