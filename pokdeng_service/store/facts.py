"""One stored event as audits read it: position, kind, payload, cause, time and chain digest.

``Fact`` is a named tuple (audits read thousands of them; a validated pydantic view, or
even a frozen dataclass, costs several times more to build). ``views.RecordedEvent`` has the same fields for
API replies; both satisfy ``Recorded``, which is what the audit checks take.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple, Protocol

import orjson
from eventsourcing.persistence import JSONTranscoder, Mapper

# The library's envelope of a stored event, not part of its payload.
_ENVELOPE = frozenset({"originator_id", "originator_version", "timestamp", "originator_topic"})


class Recorded(Protocol):
    @property
    def position(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def data(self) -> dict[str, Any]: ...
    @property
    def command_id(self) -> str: ...
    @property
    def timestamp(self) -> str: ...
    @property
    def digest(self) -> str: ...


class Fact(NamedTuple):
    position: int
    kind: str
    data: dict[str, Any]
    command_id: str
    timestamp: str
    digest: str


def fact_of(item: Any) -> Fact:
    """A stored domain event (as ``app.events.get`` gives it) as a ``Fact``.

    Chained facts carry ``kind``, ``data``, ``command_id`` and ``digest``; any other stored
    event (a stream's creation, a wallet movement) is named after its class, with its own
    attributes as the payload and no cause or digest.
    """
    kind = getattr(item, "kind", None)
    if kind is None:
        return Fact(
            item.originator_version,
            type(item).__name__,
            payload_of(item),
            getattr(item, "command_id", ""),
            item.timestamp.isoformat(),
            getattr(item, "digest", ""),
        )
    return Fact(item.originator_version, kind, item.data, item.command_id, item.timestamp.isoformat(), item.digest)


def payload_of(item: Any) -> dict[str, Any]:
    """A stored event's own attributes, without the library's envelope."""
    return {k: v for k, v in item.__dict__.items() if k not in _ENVELOPE}


def facts_of_rows(mapper: Mapper[Any], rows: Iterable[Any]) -> list[Fact]:
    """Stored rows (``recorder.select_events``) as ``Fact`` records, decoded straight from their JSON.

    With the library's JSON transcoder and neither compression nor encryption (the
    default), a row's state is the JSON of the event's attributes, times written as
    ``{"_type_": "datetime_iso", "_data_": ISO text}``; orjson reads that several times
    faster than the library's decoder, which calls back into Python for every object.
    The time is kept as the ISO text stored (the same text ``datetime.isoformat`` gives
    back for anything this service wrote). Any row not in that form (another transcoder, a
    cipher, a compressor, an older class version to upcast, an unexpected time) is decoded
    by the library's mapper instead, so both ways give the same ``Fact``.
    """
    plain = type(mapper.transcoder) is JSONTranscoder and mapper.cipher is None and mapper.compressor is None
    out: list[Fact] = []
    for row in rows:
        fact = _plain_fact(row) if plain else None
        out.append(fact if fact is not None else fact_of(mapper.to_domain_event(row)))
    return out


def _plain_fact(row: Any) -> Fact | None:
    """A row's ``Fact`` from its JSON, or None if the row is not in the plain form."""
    try:
        state = orjson.loads(row.state)
        stamp = state["timestamp"]
        text = stamp["_data_"]
        kind = state.get("kind")
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
        return None
    if len(stamp) != 2 or stamp["_type_"] != "datetime_iso" or type(text) is not str or "class_version" in state:
        return None
    if kind is None:  # a stream's creation or another plain event: named after its class
        name = row.topic.rpartition(":")[2].rpartition(".")[2]
        payload = {k: v for k, v in state.items() if k not in _ENVELOPE}
        if any(type(v) is dict and "_type_" in v for v in payload.values()):
            return None  # a transcoded value: the library knows its type
        return Fact(row.originator_version, name, payload, "", text, "")
    data, command_id, digest = state.get("data"), state.get("command_id"), state.get("digest")
    if type(kind) is not str or type(data) is not dict or type(command_id) is not str or type(digest) is not str:
        return None
    return Fact(row.originator_version, kind, data, command_id, text, digest)


def fact_of_row(mapper: Mapper[Any], row: Any) -> Fact:
    """One stored row as a ``Fact`` (``facts_of_rows`` for a single row)."""
    return facts_of_rows(mapper, (row,))[0]
