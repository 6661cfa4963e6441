"""The notification log's entries: what a stored event is and where it is (``Queries.read_notifications``,
``Queries.log_activity``).

A ``Notification`` is validated when a value is not of its field's type (a stream that is not what it
claims), and built without validation otherwise (``model_construct``: the same view, tests/service/
test_fastpaths_mapper.py); its data goes through a JSON round trip unless it is plain JSON already.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NamedTuple
from uuid import UUID

from pokdeng_service.application.views import Notification
from pokdeng_service.store.facts import payload_of

STREAM_OF = {
    "RoundRecord": "round",
    "TableRecord": "table",
    "Wallet": "wallet",
    "SealedSeed": "seed",
    "CommandRecord": "request",
    "RoundLog": "log",  # the store's log of closed rounds (application/checkpoints.py)
}


class Activity(NamedTuple):
    """Where a stored event is and what it is: ``Notification`` without the data (``log_activity``)."""

    position: int
    stream: str
    stream_id: str
    kind: str
    timestamp: str


def address(item: Any, wallet_name: Callable[[UUID], str] | None = None) -> tuple[str, Any, Any, dict[str, Any]]:
    """A stored event's stream, its stream's id, that id as shown (a wallet's named by ``wallet_name``) and its
    data."""
    owner = type(item).__qualname__.split(".")[0]
    stream = STREAM_OF.get(owner, owner)
    stream_id = getattr(item, "stream_id", "")
    data = getattr(item, "data", None)
    if data is None:
        data = {k: v for k, v in payload_of(item).items() if k not in ("sealed", "nonce", "digest")}
        key = {"round": "round_id", "table": "table_id", "wallet": "wallet_id", "seed": "round_id"}.get(stream, "")
        stream_id = str(data.get(key, "")) if key else ""
    if stream == "request":
        data = {"request_id": data.get("request_id", "")}
    stream_id = stream_id or str(item.originator_id)
    if wallet_name is not None and stream == "wallet" and stream_id == str(item.originator_id):
        return stream, stream_id, wallet_name(item.originator_id), data
    return stream, stream_id, stream_id, data


def notification(position: int, item: Any, wallet_name: Callable[[UUID], str] | None = None) -> Notification:
    """The notification of a stored event; a wallet's stream named by ``wallet_name`` (its wallet id)."""
    stream, stream_id, named, data = address(item, wallet_name)
    kind = getattr(item, "kind", None) or type(item).__name__
    version = item.originator_version
    data = data if _json_plain(data) else json.loads(json.dumps(data, default=str))
    fields = {"position": position, "stream": stream, "stream_version": version, "kind": kind, "data": data}
    fields["timestamp"] = item.timestamp.isoformat()
    if type(data) is dict and type(stream_id) is str and type(kind) is str and type(version) is int:
        # (every value is of its field's type: the notification as validated, without validating it)
        return Notification.model_construct(stream_id=named, **fields)
    note = Notification(stream_id=stream_id, **fields)
    return note if named is stream_id else note.model_copy(update={"stream_id": named})


_JSON_SCALARS = frozenset({str, int, bool, type(None)})


def _json_plain(value: Any) -> bool:
    """Whether ``json.loads(json.dumps(value))`` is ``value`` again: a dict (text keys) of lists, text, integers,
    booleans and nulls."""
    kind = type(value)
    if kind is dict:
        return all(type(k) is str and _json_plain(v) for k, v in value.items())
    if kind is list:
        return all(_json_plain(v) for v in value)
    return kind in _JSON_SCALARS
