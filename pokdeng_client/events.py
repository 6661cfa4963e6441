"""Stored events as typed ``pokdeng.v1`` messages, and back: one generic mapping, no per-kind code.

A stored event is a kind and a ``data`` object (its canonical JSON is what the audit chain
covers). Its typed message is the member of ``RecordedEvent.event`` named after the kind, and
the message's fields are the data's members, by name, with these rules (docs/api.md states them
for clients, which rebuild ``data`` from the typed message the same way: ``data_of``):

* a scalar field is the member's value; an ``optional`` field that is unset is ``null``;
* an enum field is the member's text: the value's name without the enum's prefix, in lower case
  (``BET_OUTCOME_PLAYER_WINS`` is ``"player_wins"``, ``PROFILE_CLASSIC`` is ``"classic"``);
* a ``Ratio`` is the text of the fraction: ``"19/20"``, or ``"2"`` when the denominator is 1;
* a repeated message field is an array of arrays: each element's fields in field-number order
  (``SeatCard`` is ``[seat, card]``; ``HandCards`` is ``[seat, [cards...]]``).

The kind of a member is ``EVENT_KIND_`` and the member's name in upper case; the kind's *text* in
the chain is the stored one (``KIND_TEXT``): the member's name for round and table facts, the
event class's name for wallet events and records.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from pokdeng_client.v1 import pokdeng_pb2 as pb

_EVENT: Any = pb.RecordedEvent.DESCRIPTOR.oneofs_by_name["event"]
MEMBERS: frozenset[str] = frozenset(f.name for f in _EVENT.fields)
_FIELDS: Any = pb.RecordedEvent.DESCRIPTOR.fields_by_name

_RECORDS: dict[tuple[str, str], str] = {
    ("round", "Started"): "round_record_started",
    ("table", "Opened"): "table_record_opened",
    ("seed", "Sealed"): "seed_sealed",
    ("request", "Accepted"): "request_accepted",
}
_PREFIXED = {"wallet": "wallet_", "log": "log_"}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def member_of(stream: str, kind: str) -> str | None:
    """The ``RecordedEvent.event`` member for a stored event of ``stream`` (``"round"``, ``"table"``,
    ``"wallet"``, ``"seed"``, ``"request"``, ``"log"``) and kind; None for a kind this API does not know."""
    name = _RECORDS.get((stream, kind))
    if name is None:
        prefix = _PREFIXED.get(stream)
        name = prefix + _snake(kind) if prefix is not None else kind
    return name if name in MEMBERS else None


def kind_text(member: str) -> str:
    """The kind's text as the store (and the audit chain) has it, from the member's name."""
    for (_stream, kind), name in _RECORDS.items():
        if name == member:
            return kind
    for prefix in _PREFIXED.values():
        if member.startswith(prefix):
            return _camel(member[len(prefix) :])
    return member


def event_kind(member: str) -> pb.EventKind.ValueType:
    return pb.EventKind.Value(f"EVENT_KIND_{member.upper()}")


def _enum_prefix(enum: EnumDescriptor) -> str:
    return _snake(enum.name).upper() + "_"


def _repeated(field: Any) -> bool:
    flag = getattr(field, "is_repeated", None)  # protobuf 7 (older: the field's label)
    return bool(flag) if flag is not None else bool(field.label == FieldDescriptor.LABEL_REPEATED)


def _fill(message: Message, data: Mapping[str, Any]) -> None:
    fields: Any = message.DESCRIPTOR.fields_by_name
    for key, value in data.items():
        field = fields.get(key)
        if field is not None and value is not None:
            _set(message, field, value)


def _set(message: Message, field: Any, value: Any) -> None:
    if _repeated(field):
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
    descriptors: Any = message.DESCRIPTOR.fields
    for field, value in zip(descriptors, item, strict=False):
        if value is not None:
            _set(message, field, value)


def _scalar(field: Any, value: Any) -> Any:
    if field.enum_type is not None:
        return field.enum_type.values_by_name[_enum_prefix(field.enum_type) + str(value).upper()].number
    if field.type == FieldDescriptor.TYPE_BOOL:
        return bool(value)
    if field.cpp_type in (FieldDescriptor.CPPTYPE_INT32, FieldDescriptor.CPPTYPE_INT64, FieldDescriptor.CPPTYPE_UINT64):
        return int(value)
    return value


def typed(member: str, data: Mapping[str, Any]) -> Message:
    """The typed message of member ``member`` with ``data``'s fields."""
    message_class = getattr(pb, _FIELDS[member].message_type.name)
    message: Message = message_class()
    _fill(message, data)
    return message


def set_event(target: pb.RecordedEvent, member: str, data: Mapping[str, Any]) -> None:
    """Set ``target``'s kind and typed member from a stored event's data."""
    target.kind = event_kind(member)
    getattr(target, member).CopyFrom(typed(member, data))


# --- back: the typed message to the stored data (what a client does to check a digest) ---------


def data_of(message: Message) -> dict[str, Any]:
    """The stored ``data`` object of a typed event message (the rules above, reversed)."""
    return {field.name: _get(message, field) for field in message.DESCRIPTOR.fields}


def _get(message: Message, field: Any) -> Any:
    value = getattr(message, field.name)
    if _repeated(field):
        if field.message_type is not None:
            return [_positional(item) for item in value]
        return [_plain(field, item) for item in value]
    if field.has_presence and not message.HasField(field.name):
        return None
    if field.message_type is not None:
        if field.message_type.full_name == "pokdeng.v1.Ratio":
            return str(Fraction(value.numerator, value.denominator or 1))
        return data_of(value)
    return _plain(field, value)


def _positional(message: Message) -> list[Any]:
    return [_get(message, field) for field in message.DESCRIPTOR.fields]


def _plain(field: Any, value: Any) -> Any:
    if field.enum_type is not None:
        return field.enum_type.values_by_number[value].name[len(_enum_prefix(field.enum_type)) :].lower()
    return value


def descriptor_of(member: str) -> Descriptor:
    descriptor: Descriptor = _FIELDS[member].message_type
    return descriptor
