"""Plain-value encoding of core events, and the hash chain over a stream's events.

Core events are frozen dataclasses of str, int, bool, None and tuples. They are
stored as JSON objects (tuples become arrays); decoding turns arrays back into
tuples. ``chain_digest`` links each recorded event to the one before it
(docs/audit.md): SHA-256 over the previous digest and the canonical JSON of the
event's kind, payload, position, command id and time.

Canonical JSON is RFC 8785, the JSON Canonicalization Scheme (JCS), as UTF-8: members sorted
by the UTF-16 code units of their names, no white space, strings escaped as ECMAScript's
JSON.stringify does (the quote, the backslash and the control characters only; the short
forms for backspace, form feed, line feed, carriage return and tab), integers in decimal.
A digested payload holds objects, arrays, text, booleans, null and integers of magnitude
below 2^53 (amounts are capped there at the API); never floats.

It is made with orjson, which writes exactly these bytes several times faster for such values
whose text has no character beyond U+FFFF (below U+10000 the order of code points is the
order of UTF-16 code units); anything else (a character beyond U+FFFF anywhere, a value orjson
refuses) is written by the ``rfc8785`` package. Tests prove both against that package.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from typing import Any, TypeVar

import orjson
import rfc8785

T = TypeVar("T")

CHAIN_VERSION = "pokdeng-chain-v1"


_FIELD_NAMES: dict[type[Any], tuple[str, ...]] = {}


def field_names(cls: type[Any]) -> tuple[str, ...]:
    """The field names of dataclass ``cls``, in order (looked up once per class)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def to_data(event: Any) -> dict[str, Any]:
    """A core event as a JSON-ready dict (tuples as lists)."""
    return {name: _plain(getattr(event, name)) for name in field_names(type(event))}


def _plain(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def _tuples(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(_tuples(v) for v in value)
    return value


def from_data(cls: type[T], data: dict[str, Any]) -> T:
    """Rebuild a core event of class ``cls`` from ``to_data`` output (or its JSON round trip)."""
    return cls(**{k: _tuples(v) for k, v in data.items()})


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
# Subclasses of str, int, dict and list, dataclasses and datetimes are handed back (a
# TypeError) rather than written in orjson's own way: the standard library decides those.
_OPTIONS = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
)


_BEYOND_BMP = re.compile(rb"[\xf0-\xf4]")  # the lead byte of every UTF-8 sequence beyond U+FFFF


def canonical_bytes(value: Any) -> bytes:
    """RFC 8785 (JCS) as UTF-8: the one JSON form that digests are taken of."""
    try:
        out = orjson.dumps(value, option=_OPTIONS)
    except TypeError:  # an integer beyond 64 bits, a non-text key, a subclass
        return _jcs(value)
    # (ASCII output, nearly all of it, has no character beyond U+FFFF: the search is skipped)
    return out if out.isascii() or _BEYOND_BMP.search(out) is None else _jcs(value)


def _jcs(value: Any) -> bytes:
    try:
        return rfc8785.dumps(value)
    except rfc8785.IntegerDomainError:  # beyond 2^53: outside the digested domain; sorted compact JSON
        return _CANONICAL.encode(value).encode()


def canonical_json(value: Any) -> str:
    """``canonical_bytes`` as text."""
    return canonical_bytes(value).decode()


def genesis_digest(stream: str) -> str:
    """The chain's starting digest for a stream (a round id, a table id, a wallet id)."""
    return hashlib.sha256(f"{CHAIN_VERSION}\x00{stream}".encode()).hexdigest()


def chain_digest(previous: str, kind: str, data: dict[str, Any], position: int, command_id: str, timestamp: str) -> str:
    body = canonical_bytes(
        {"kind": kind, "data": data, "position": position, "command_id": command_id, "timestamp": timestamp}
    )
    return hashlib.sha256(previous.encode() + b"\x00" + body).hexdigest()


def wallet_digest(
    previous: str,
    kind: str,
    data: dict[str, Any],
    position: int,
    timestamp: str,
    balance: int,
    reservations: dict[str, int],
) -> str:
    """A wallet event's link in its wallet's chain (docs/audit.md): like ``chain_digest``, with the
    wallet's state after the event (its balance and its reservations by round) in the digested
    object and no command id, so that a snapshot of the wallet can be checked against the one
    stored event it ends at."""
    body = canonical_bytes(
        {
            "kind": kind,
            "data": data,
            "position": position,
            "timestamp": timestamp,
            "balance": balance,
            "reservations": reservations,
        }
    )
    return hashlib.sha256(previous.encode() + b"\x00" + body).hexdigest()
