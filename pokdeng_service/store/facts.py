"""One stored event as audits and API replies read it: position, kind, payload, cause, time and chain digest.

``RecordedEvent`` is the one record type of a stored event: audits build thousands of them
and the application's views (``views.RecordedEvent`` is this class) hold them. It is a named
tuple: a validated pydantic view, or even a frozen dataclass, costs several times more to
build. ``Fact`` is its old name. ``Recorded`` is the protocol the audit checks take (which
``RecordedEvent`` satisfies).

Stored rows are decoded into this type by ``fastpaths.facts_of_rows`` (a fenced fast path
beside the library's mapper).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

from pokdeng_core.events import StoredEvent

# The library's envelope of a stored event, not part of its payload.
ENVELOPE = frozenset({"originator_id", "originator_version", "timestamp", "originator_topic"})


class Recorded(StoredEvent, Protocol):
    """A stored event as the audits read it: ``pokdeng_core.events.StoredEvent`` (position, kind, payload),
    with its cause, time and chain digest."""

    @property
    def command_id(self) -> str: ...
    @property
    def timestamp(self) -> str: ...
    @property
    def digest(self) -> str: ...


class RecordedEvent(NamedTuple):
    """One stored event of a stream: its position, kind, payload, cause, time and chain digest."""

    position: int
    kind: str
    data: dict[str, Any]
    command_id: str
    timestamp: str
    digest: str


Fact = RecordedEvent  # the old name


def fact_of(item: Any) -> RecordedEvent:
    """A stored domain event (as ``app.events.get`` gives it) as a ``RecordedEvent``.

    Chained facts carry ``kind``, ``data``, ``command_id`` and ``digest``; any other stored
    event (a stream's creation, a wallet movement) is named after its class, with its own
    attributes as the payload and no cause; a wallet movement's ``digest`` (its wallet's
    chain) is the record's digest, not part of its payload (none: ``""``).
    """
    kind = getattr(item, "kind", None)
    if kind is None:
        payload = payload_of(item)
        digest = payload.pop("digest", "")
        return RecordedEvent(
            item.originator_version,
            type(item).__name__,
            payload,
            getattr(item, "command_id", ""),
            item.timestamp.isoformat(),
            digest,
        )
    return RecordedEvent(
        item.originator_version, kind, item.data, item.command_id, item.timestamp.isoformat(), item.digest
    )


def payload_of(item: Any) -> dict[str, Any]:
    """A stored event's own attributes, without the library's envelope."""
    return {k: v for k, v in item.__dict__.items() if k not in ENVELOPE}
