"""The audit chain link of a typed ``RecordedEvent``: what a client computes to check ``chain_digest``.

docs/audit.md defines the chain; docs/api.md says how its input comes from the typed message:

    digest_n = hex(SHA-256( digest_{n-1} as 64 hex characters ‖ 0x00 ‖ RFC 8785 JSON of the event's object ))

A round's or table's event object is ``{"kind", "data", "position", "command_id", "timestamp"}``;
a wallet's is ``{"kind", "data", "position", "timestamp", "balance", "reservations"}``. ``data`` is
``events.data_of`` of the typed member (or, the same, the JSON in ``canonical_data``), the kind's
text is ``events.kind_text`` of the member, and the timestamp's text is ``timestamp_text``.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import rfc8785
from google.protobuf.timestamp_pb2 import Timestamp

from pokdeng_client import events
from pokdeng_client.v1 import pokdeng_pb2 as pb

VERSION = b"pokdeng-chain-v1"


def genesis(stream: str) -> str:
    """The digest before a stream's first chained event: ``stream`` is the round id itself,
    ``table:<id>`` or ``wallet:<id>``."""
    return hashlib.sha256(VERSION + b"\x00" + stream.encode("utf-8")).hexdigest()


def timestamp_text(stamp: Timestamp) -> str:
    """The time as the chain covers it: ``YYYY-MM-DDTHH:MM:SS.ffffff+00:00`` (no fraction at a whole second).
    The inverse of ``timestamp_of``."""
    moment = datetime.fromtimestamp(stamp.seconds, tz=UTC).replace(microsecond=stamp.nanos // 1000)
    return moment.isoformat()


def timestamp_of(text: str) -> Timestamp:
    """A time as the record stores it (``datetime.isoformat()`` of a UTC time) as a Timestamp, exact to the
    microsecond; "" gives the empty Timestamp. The inverse of ``timestamp_text`` (what the server sends
    as ``record_time``)."""
    if not text:
        return Timestamp()
    seconds, nanos = _seconds_nanos(text)
    return Timestamp(seconds=seconds, nanos=nanos)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NAIVE_EPOCH = datetime(1970, 1, 1)


@lru_cache(maxsize=8192)
def _seconds_nanos(text: str) -> tuple[int, int]:
    """``Timestamp.FromDatetime(datetime.fromisoformat(text))``'s seconds (``calendar.timegm`` of the UTC time:
    whole seconds, rounded down) and nanoseconds (the time's microseconds), in integers."""
    moment = datetime.fromisoformat(text)
    since = moment - (_EPOCH if moment.tzinfo is not None else _NAIVE_EPOCH)
    return since.days * 86_400 + since.seconds, moment.microsecond * 1_000


def member(event: pb.RecordedEvent) -> str:
    name = event.WhichOneof("event")
    if name is None:
        raise ValueError("the event has no typed member")
    return name


def event_object(event: pb.RecordedEvent) -> dict[str, Any]:
    """The object whose RFC 8785 form the event's chain link hashes."""
    name = member(event)
    data = events.data_of(getattr(event, name))
    base: dict[str, Any] = {
        "kind": events.kind_text(name),
        "data": data,
        "position": event.sequence,
        "timestamp": timestamp_text(event.record_time),
    }
    if name.startswith("wallet_"):
        after = event.wallet_after
        base["balance"] = after.balance
        base["reservations"] = {r.round_id: r.amount for r in after.reservations}
    else:
        base["command_id"] = event.request_id
    return base


def link(previous: str, event: pb.RecordedEvent) -> str:
    """The chain digest ``event`` must carry when the digest before it is ``previous`` (hex)."""
    body = rfc8785.dumps(event_object(event))
    return hashlib.sha256(previous.encode("ascii") + b"\x00" + body).hexdigest()


def check(previous: str, event: pb.RecordedEvent) -> bool:
    """True when ``event.chain_digest`` continues the chain from ``previous``."""
    return not event.redacted and link(previous, event) == event.chain_digest
