"""One stored event as audits read it: position, kind, payload, cause, time and chain digest.

``Fact`` is a named tuple (audits read thousands of them; a validated pydantic view, or
even a frozen dataclass, costs several times more to build). ``views.RecordedEvent`` has the same fields for
API replies; both satisfy ``Recorded``, which is what the audit checks take.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

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
