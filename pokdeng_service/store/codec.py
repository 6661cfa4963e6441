"""Plain-value encoding of core events, and the hash chain over a stream's events.

Core events are frozen dataclasses of str, int, bool, None and tuples. They are
stored as JSON objects (tuples become arrays); decoding turns arrays back into
tuples. ``chain_digest`` links each recorded event to the one before it
(docs/audit.md): SHA-256 over the previous digest and the canonical JSON of the
event's kind, payload, position, command id and time.

Canonical JSON is what ``json.dumps(value, sort_keys=True, separators=(",", ":"),
ensure_ascii=False)`` writes, as UTF-8. It is made with orjson, which writes the same
bytes for every value a payload can hold (objects with text keys, arrays, text,
integers, booleans, null) several times faster; the standard library's encoder takes
what orjson refuses (integers beyond 64 bits). Floats never occur in a digested payload:
the two encoders write some of them differently (``1e+16`` against ``1e16``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any, TypeVar

import orjson

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


def canonical_bytes(value: Any) -> bytes:
    """Sorted keys, no spaces, UTF-8 text as is: the one JSON form that digests are taken of."""
    try:
        return orjson.dumps(value, option=_OPTIONS)
    except TypeError:  # an integer beyond 64 bits, a non-text key, a subclass: the standard library's form
        return _CANONICAL.encode(value).encode()


def canonical_json(value: Any) -> str:
    """``canonical_bytes`` as text."""
    try:
        return orjson.dumps(value, option=_OPTIONS).decode()
    except TypeError:
        return _CANONICAL.encode(value)


def genesis_digest(stream: str) -> str:
    """The chain's starting digest for a stream (a round id, a table id, a wallet id)."""
    return hashlib.sha256(f"{CHAIN_VERSION}\x00{stream}".encode()).hexdigest()


def chain_digest(previous: str, kind: str, data: dict[str, Any], position: int, command_id: str, timestamp: str) -> str:
    body = canonical_bytes(
        {"kind": kind, "data": data, "position": position, "command_id": command_id, "timestamp": timestamp}
    )
    return hashlib.sha256(previous.encode() + b"\x00" + body).hexdigest()
