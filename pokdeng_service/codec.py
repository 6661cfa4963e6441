"""Plain-value encoding of core events, and the hash chain over a stream's events.

Core events are frozen dataclasses of str, int, bool, None and tuples. They are
stored as JSON objects (tuples become arrays); decoding turns arrays back into
tuples. ``chain_digest`` links each recorded event to the one before it
(docs/audit.md): SHA-256 over the previous digest and the canonical JSON of the
event's kind, payload, position, command id and time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any, TypeVar

T = TypeVar("T")

CHAIN_VERSION = "pokdeng-chain-v1"


def to_data(event: Any) -> dict[str, Any]:
    """A core event as a JSON-ready dict (tuples as lists)."""
    return {f.name: _plain(getattr(event, f.name)) for f in dataclasses.fields(event)}


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


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, UTF-8 text as is: the one JSON form that digests are taken of."""
    return _CANONICAL.encode(value)


def genesis_digest(stream: str) -> str:
    """The chain's starting digest for a stream (a round id, a table id, a wallet id)."""
    return hashlib.sha256(f"{CHAIN_VERSION}\x00{stream}".encode()).hexdigest()


def chain_digest(previous: str, kind: str, data: dict[str, Any], position: int, command_id: str, timestamp: str) -> str:
    body = canonical_json(
        {"kind": kind, "data": data, "position": position, "command_id": command_id, "timestamp": timestamp}
    )
    return hashlib.sha256(f"{previous}\x00{body}".encode()).hexdigest()
