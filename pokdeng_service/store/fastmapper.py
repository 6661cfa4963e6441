"""The application's mapper: the library's ``Mapper`` with plain rows read and written by orjson.

One of the library fast paths of ``fastpaths`` (documented there, under ``PlainMapper``, with its
guard): kept in a module of its own for length. Whether a topic's class is above version 1 is
looked up in ``fastpaths._PLAIN_TOPICS``, shared with ``fastpaths.plain_fact``.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import orjson
from eventsourcing.persistence import DatetimeAsISO, JSONTranscoder, Mapper, StoredEvent, find_id_convertor
from eventsourcing.utils import get_topic, resolve_topic

from pokdeng_service.store import fastpaths


class PlainMapper(Mapper[uuid.UUID]):
    """The library's ``Mapper``, with rows in the plain form decoded by ``plain_event``."""

    def __init__(self, transcoder: Any, compressor: Any = None, cipher: Any = None) -> None:
        super().__init__(transcoder, compressor, cipher)
        json = isinstance(transcoder, JSONTranscoder)
        read, write = (transcoder.names.get("datetime_iso"), transcoder.types.get(datetime)) if json else (None, None)
        self.plain = fastpaths.plain_mapper(self) and type(read) is DatetimeAsISO and type(write) is DatetimeAsISO

    def to_stored_event(self, domain_event: Any) -> StoredEvent:
        if self.plain:
            stored = plain_stored_event(domain_event)
            if stored is not None:
                return stored
        return super().to_stored_event(domain_event)

    def to_domain_event(self, stored_event: Any) -> Any:
        if self.plain:
            domain_event = plain_event(stored_event)
            if domain_event is not None:
                return domain_event
        return super().to_domain_event(stored_event)


def plain_mapper_of(mapper: Mapper[Any]) -> Mapper[Any]:
    """``mapper`` as a ``PlainMapper`` (the same transcoder, compressor and cipher), if it is the library's own."""
    if type(mapper) is not Mapper:
        return mapper
    return PlainMapper(mapper.transcoder, mapper.compressor, mapper.cipher)


_TAG = b'"_type_"'
_ESCAPE = b"\\u"


def plain_event(row: Any) -> Any:
    """The domain event ``Mapper.to_domain_event`` makes of ``row`` (a ``StoredEvent``), or None when the row is
    not plain JSON whose one tagged value is its ``timestamp``."""
    stored = row.state
    if type(stored) is not bytes or stored.count(_TAG) != 1 or _ESCAPE in stored:
        return None
    topic = row.topic
    plain = fastpaths._PLAIN_TOPICS.get(topic)
    if plain is None:
        plain = fastpaths._plain_topic(topic)
    if not plain:  # a class above version 1 (the library upcasts), or an unknown topic
        return None
    cls = resolve_topic(topic)
    if not isinstance(cls, type):
        return None
    try:
        state = orjson.loads(stored)
        stamp = state["timestamp"]
        text = stamp["_data_"]
        if len(stamp) != 2 or stamp["_type_"] != "datetime_iso" or type(text) is not str or "class_version" in state:
            return None
        state["timestamp"] = datetime.fromisoformat(text)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
        return None
    originator_id = row.originator_id
    convert: Any = find_id_convertor
    state["originator_id"] = convert(cls, type(originator_id))(originator_id)
    state["originator_version"] = row.originator_version
    domain_event: Any = object.__new__(cls)
    object.__setattr__(domain_event, "__dict__", state)
    return domain_event


_WRITE_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_PLAIN_SCALARS = frozenset({str, int, bool, type(None)})


def _time_tag(value: Any) -> Any:
    if type(value) is datetime:  # the library's ``DatetimeAsISO`` (looked up by exact type)
        return {"_type_": "datetime_iso", "_data_": value.isoformat()}
    raise TypeError  # (never reached for a state ``_writes_plain`` passed)


def _writes_plain(value: Any) -> bool:
    """Whether orjson writes ``value`` as the library's JSON encoder does: dicts with text keys, lists and tuples,
    text, integers, booleans, nulls, and times (tagged); no float, no subclass, nothing else tagged."""
    kind = type(value)
    if kind in _PLAIN_SCALARS or kind is datetime:
        return True
    if kind is dict:  # (loops rather than ``all`` over a generator: every event is checked, on every save)
        for key, item in value.items():
            if type(key) is not str or (type(item) not in _PLAIN_SCALARS and not _writes_plain(item)):
                return False
        return True
    if kind is list or kind is tuple:
        for item in value:  # noqa: SIM110 (a loop: a generator costs more, on every event saved)
            if type(item) not in _PLAIN_SCALARS and not _writes_plain(item):
                return False
        return True
    return False


def plain_stored_event(domain_event: Any) -> StoredEvent | None:
    """``Mapper.to_stored_event(domain_event)`` for the library's JSON transcoder (neither cipher nor compressor),
    the state written by orjson, or None when the state holds a value orjson would write otherwise (a float,
    a uuid, a subclass, an integer beyond 64 bits, text that is not Unicode) or the class is above version 1."""
    cls = type(domain_event)
    if getattr(cls, "class_version", 1) != 1:
        return None
    state = dict(vars(domain_event))
    originator_id = state.pop("originator_id")
    originator_version = state.pop("originator_version")
    if not _writes_plain(state):
        return None
    try:
        written = orjson.dumps(state, default=_time_tag, option=_WRITE_OPTIONS)
    except TypeError:
        return None
    return StoredEvent(originator_id, originator_version, get_topic(cls), written)
