"""``pokdeng_client.events`` fills typed events from plans cached per message type: the very messages the
plain descriptor walk gave (kept here as the reference), for every event a real app stores.

The rules (the module's docstring) are the reference's: a field by name, enums by their text,
a ``Ratio`` from the fraction's text, repeated messages from positional arrays; the kind set,
and the typed member set even when none of its fields is.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from pokdeng_client import events
from pokdeng_client.v1 import pokdeng_pb2 as pb
from pokdeng_service.application.notifications import address
from tests.service import play
from tests.service.test_fastpaths import Played, play_store

# --- the reference: the descriptor walk as it was, one lookup per field and value ----------------


def _fill(message: Message, data: Mapping[str, Any]) -> None:
    fields: Any = message.DESCRIPTOR.fields_by_name
    for key, value in data.items():
        field = fields.get(key)
        if field is not None and value is not None:
            _set(message, field, value)


def _set(message: Message, field: Any, value: Any) -> None:
    if events._repeated(field):
        target = getattr(message, field.name)
        for item in value:
            if field.message_type is not None:
                _fill_positional(target.add(), item)
            else:
                target.append(_scalar(field, item))
    elif field.message_type is not None:
        sub = getattr(message, field.name)
        if field.message_type.full_name == "pokdeng.v1.Ratio":
            ratio = Fraction(str(value))
            sub.numerator, sub.denominator = ratio.numerator, ratio.denominator
        else:
            _fill(sub, value)
    else:
        setattr(message, field.name, _scalar(field, value))


def _fill_positional(message: Message, item: Any) -> None:
    if isinstance(item, Mapping):
        _fill(message, item)
        return
    for field, value in zip(message.DESCRIPTOR.fields, item, strict=False):
        if value is not None:
            _set(message, field, value)


def _scalar(field: Any, value: Any) -> Any:
    if field.enum_type is not None:
        prefix = events._enum_prefix(field.enum_type)
        return field.enum_type.values_by_name[prefix + str(value).upper()].number
    if field.type == FieldDescriptor.TYPE_BOOL:
        return bool(value)
    if field.cpp_type in (FieldDescriptor.CPPTYPE_INT32, FieldDescriptor.CPPTYPE_INT64, FieldDescriptor.CPPTYPE_UINT64):
        return int(value)
    return value


def _message_type(member: str) -> Descriptor:
    """The message type of a RecordedEvent's member."""
    descriptor = pb.RecordedEvent.DESCRIPTOR.fields_by_name[member].message_type
    assert descriptor is not None, member
    return descriptor


def reference_event(member: str, data: Mapping[str, Any]) -> bytes:
    target = pb.RecordedEvent()
    target.kind = events.event_kind(member)
    message = getattr(pb, _message_type(member).name)()
    _fill(message, data)
    getattr(target, member).CopyFrom(message)
    return target.SerializeToString(deterministic=True)


def planned_event(member: str, data: Mapping[str, Any]) -> bytes:
    target = pb.RecordedEvent()
    events.set_event(target, member, data)
    return target.SerializeToString(deterministic=True)


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    folder = tmp_path_factory.mktemp("plans")
    app = play.make_app({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(folder / "p.sqlite")})
    try:
        yield play_store(app)
    finally:
        app.close()


def test_planned_events_are_the_walked_ones(played: Played) -> None:
    app = played.app
    members = set()
    for row in app.recorder.select_notifications(start=1, limit=100_000):
        item = app.mapper.to_domain_event(row)
        stream, _id, _named, data = address(item)
        kind = getattr(item, "kind", None) or type(item).__name__
        member = events.member_of(stream, kind)
        if member is None:
            continue
        members.add(member)
        assert planned_event(member, data) == reference_event(member, data), (member, data)
        assert events.typed(member, data) == events.typed(member, data)
        assert events.data_of(events.typed(member, data)) == events.data_of(_typed_reference(member, data))
    assert len(members) >= 30, sorted(members)


def _typed_reference(member: str, data: Mapping[str, Any]) -> Message:
    message: Message = getattr(pb, _message_type(member).name)()
    _fill(message, data)
    return message


def test_every_member_from_made_up_data() -> None:
    """Every member, with each field given a value of its kind (or left out, or null), and no field at all."""
    rng = random.Random(5)
    for field in pb.RecordedEvent.DESCRIPTOR.oneofs_by_name["event"].fields:
        member = field.name
        assert planned_event(member, {}) == reference_event(member, {})
        assert pb.RecordedEvent.FromString(planned_event(member, {})).WhichOneof("event") == member
        for _ in range(20):
            data = {f.name: _value(f, rng) for f in _message_type(member).fields if rng.random() < 0.8}
            data["not_a_field"] = 1
            assert planned_event(member, data) == reference_event(member, data), (member, data)


def _value(field: Any, rng: random.Random, positional: bool = False) -> Any:
    if rng.random() < 0.1:
        return None
    if events._repeated(field):
        if field.message_type is not None:
            return [[_value(f, rng) for f in field.message_type.fields] for _ in range(rng.randrange(3))]
        return [_scalar_value(field, rng) for _ in range(rng.randrange(4))]
    if field.message_type is not None:
        if field.message_type.full_name == "pokdeng.v1.Ratio":
            return rng.choice(["19/20", "2", "3/2", 1])
        return {f.name: _value(f, rng) for f in field.message_type.fields}
    return _scalar_value(field, rng)


def _scalar_value(field: Any, rng: random.Random) -> Any:
    if field.enum_type is not None:
        prefix = events._enum_prefix(field.enum_type)
        return rng.choice([v.name[len(prefix) :].lower() for v in field.enum_type.values])
    if field.type == FieldDescriptor.TYPE_BOOL:
        return rng.choice([True, False, 0, 1])
    if field.cpp_type in (FieldDescriptor.CPPTYPE_INT32, FieldDescriptor.CPPTYPE_INT64, FieldDescriptor.CPPTYPE_UINT64):
        return rng.randrange(0, 10**6)
    if field.type == FieldDescriptor.TYPE_BYTES:
        return bytes(rng.randrange(256) for _ in range(3))
    return rng.choice(["", "x", "อ", "a b"])


def test_timestamps_are_the_ones_from_datetime() -> None:
    """``convert.timestamp`` (integer arithmetic, cached by text) is ``Timestamp.FromDatetime`` of the parsed time."""
    from datetime import UTC, datetime, timedelta, timezone

    from google.protobuf.timestamp_pb2 import Timestamp

    from pokdeng_service.api import convert

    timestamp = vars(convert)["timestamp"]  # (what the server sends, the client's timestamp_of)

    rng = random.Random(11)
    zones = [UTC, timezone(timedelta(hours=7)), timezone(timedelta(hours=-5, minutes=-30)), None]
    zones.append(timezone(timedelta(seconds=3, microseconds=500)))
    for _ in range(5000):
        moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=rng.randrange(-(10**15), 10**17))
        zone = rng.choice(zones)
        moment = moment.astimezone(zone) if zone is not None else moment.replace(tzinfo=None)
        expected = Timestamp()
        expected.FromDatetime(datetime.fromisoformat(moment.isoformat()))
        assert timestamp(moment.isoformat()) == expected, moment.isoformat()
    assert timestamp("") == Timestamp()
