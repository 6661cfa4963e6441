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
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from google.protobuf.descriptor import EnumDescriptor, FieldDescriptor
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


# Filling a message follows a plan made once per message type (its descriptor): for each field, the
# function that sets it from a value (by name for ``_fill``, in field-number order for positional items).
Setter = Callable[[Message, Any], None]
_PLANS: dict[str, tuple[dict[str, Setter], tuple[Setter, ...]]] = {}


def _plan(descriptor: Any) -> tuple[dict[str, Setter], tuple[Setter, ...]]:
    plan = _PLANS.get(descriptor.full_name)
    if plan is None:
        by_name = {field.name: _setter(field) for field in descriptor.fields}
        plan = _PLANS[descriptor.full_name] = (by_name, tuple(by_name[field.name] for field in descriptor.fields))
    return plan


def _setter(field: Any) -> Setter:
    """How ``field`` of a message is set from a data value (the rules of this module's docstring)."""
    name = field.name
    if _repeated(field):
        if field.message_type is not None:

            def add_items(message: Message, value: Any) -> None:
                target = getattr(message, name)
                for item in value:
                    _fill_positional(target.add(), item)

            return add_items
        convert = _converter(field)

        def append_items(message: Message, value: Any) -> None:
            getattr(message, name).extend([convert(item) for item in value])

        return append_items
    if field.message_type is not None:
        if field.message_type.full_name == "pokdeng.v1.Ratio":

            def set_ratio(message: Message, value: Any) -> None:
                ratio = Fraction(str(value))
                sub = getattr(message, name)
                sub.numerator, sub.denominator = ratio.numerator, ratio.denominator

            return set_ratio

        def fill_message(message: Message, value: Any) -> None:
            _fill(getattr(message, name), value)

        return fill_message
    convert = _converter(field)

    def set_scalar(message: Message, value: Any) -> None:
        setattr(message, name, convert(value))

    return set_scalar


def _identity(value: Any) -> Any:
    return value


def _converter(field: Any) -> Callable[[Any], Any]:
    """A scalar's value from the data's (``_scalar``)."""
    if field.enum_type is not None:
        numbers = {value.name: value.number for value in field.enum_type.values}
        prefix = _enum_prefix(field.enum_type)
        return lambda value: numbers[prefix + str(value).upper()]
    if field.type == FieldDescriptor.TYPE_BOOL:
        return bool
    if field.cpp_type in (FieldDescriptor.CPPTYPE_INT32, FieldDescriptor.CPPTYPE_INT64, FieldDescriptor.CPPTYPE_UINT64):
        return int
    return _identity


def _fill(message: Message, data: Mapping[str, Any]) -> None:
    setters = _plan(message.DESCRIPTOR)[0]
    for key, value in data.items():
        setter = setters.get(key)
        if setter is not None and value is not None:
            setter(message, value)


def _fill_positional(message: Message, item: Any) -> None:
    if isinstance(item, Mapping):
        _fill(message, item)
        return
    for setter, value in zip(_plan(message.DESCRIPTOR)[1], item, strict=False):
        if value is not None:
            setter(message, value)


_CLASSES: dict[str, Any] = {}
_KINDS: dict[str, pb.EventKind.ValueType] = {}


def typed(member: str, data: Mapping[str, Any]) -> Message:
    """The typed message of member ``member`` with ``data``'s fields."""
    message_class = _CLASSES.get(member)
    if message_class is None:
        message_class = _CLASSES[member] = getattr(pb, _FIELDS[member].message_type.name)
    message: Message = message_class()
    _fill(message, data)
    return message


def set_event(target: pb.RecordedEvent, member: str, data: Mapping[str, Any]) -> None:
    """Set ``target``'s kind and typed member from a stored event's data."""
    kind = _KINDS.get(member)
    if kind is None:
        kind = _KINDS[member] = event_kind(member)
    target.kind = kind
    sub: Message = getattr(target, member)
    sub.SetInParent()  # (the member is set even when no field of it is: as a copy of an empty message sets it)
    _fill(sub, data)


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
