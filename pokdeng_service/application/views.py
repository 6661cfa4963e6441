"""What the application returns: plain, serialisable views (pydantic models)."""

from __future__ import annotations

import functools
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, PlainSerializer, ValidatorFunctionWrapHandler, WrapValidator

from pokdeng_service.store.facts import RecordedEvent as RecordedEvent  # the one record type of a stored event


class _View(BaseModel):
    model_config = ConfigDict(frozen=True)


V = TypeVar("V", bound=BaseModel)


def built(cls: type[V], /, **values: Any) -> V:
    """``cls.model_construct(**values)``, for values of their fields' types already: the same instance (its
    ``__dict__`` in the fields' order, every field set, no extra, no private attributes), without
    ``model_construct``'s per-call look-ups of aliases and defaults when every field is given and the class
    has no alias, default factory, private attribute or post-init (else ``model_construct`` itself).
    tests/service/test_views_built.py checks each view of a played store against pydantic's validated one."""
    names = _plain_fields(cls)
    if names is None or len(values) != len(names):
        return cls.model_construct(**values)
    if tuple(values) != names:  # (the keywords, a dictionary of this call's own, are kept when in field order)
        try:
            values = {name: values[name] for name in names}
        except KeyError:
            return cls.model_construct(**values)
    view = cls.__new__(cls)
    object.__setattr__(view, "__dict__", values)
    object.__setattr__(view, "__pydantic_fields_set__", set(names))
    object.__setattr__(view, "__pydantic_extra__", None)
    object.__setattr__(view, "__pydantic_private__", None)
    return view


@functools.cache
def _plain_fields(cls: type[BaseModel]) -> tuple[str, ...] | None:
    """A view class's fields, in order, if ``built`` may set them itself (else None); found once per class."""
    if cls.__pydantic_root_model__ or cls.__pydantic_post_init__ or cls.__private_attributes__:
        return None
    if cls.model_config.get("extra") == "allow":
        return None
    fields = cls.model_fields
    if any(f.alias is not None or f.validation_alias is not None for f in fields.values()):
        return None
    return tuple(fields)


class Reservation(_View):
    round_id: str
    amount: int


class WalletView(_View):
    wallet_id: str
    balance: int
    reserved: int
    available: int
    reservations: tuple[Reservation, ...]
    version: int
    currency: str = "THB"


class StatementLine(_View):
    position: int
    kind: str
    amount: int  # change of balance (0 for a reservation)
    reserved_change: int
    balance_after: int
    round_id: str = ""
    reference: str = ""
    at: str = ""


class Seat(_View):
    seat: int
    player: str


class TableView(_View):
    table_id: str
    profile: str
    profile_version: int
    options: dict[str, bool]
    min_stake: int
    max_stake: int
    seat_count: int
    seats: tuple[Seat, ...]
    dealer: str | None
    banker: str | None
    banker_rounds_left: int
    bids: tuple[tuple[str, int, int], ...]
    current_round: str | None
    round_no: int
    turn_timeout: int
    house_net: int
    commission: int
    version: int
    currency: str = "THB"


def _held(value: Any, handler: ValidatorFunctionWrapHandler) -> RecordedEvent:
    """A ``RecordedEvent`` is held as given (not rebuilt, its payload not copied); anything else
    (a dict of its fields, a tuple of them) is validated into one."""
    if type(value) is RecordedEvent:
        return value
    result: RecordedEvent = handler(value)
    return result


def _fields(event: RecordedEvent) -> dict[str, Any]:
    """A ``RecordedEvent`` serialised by field name, as when it was a pydantic view (not as an array)."""
    return event._asdict()


# A view's field of stored events (``RecordedEvent`` is the store's named tuple, ``store.facts``).
RecordedEvents = tuple[Annotated[RecordedEvent, WrapValidator(_held), PlainSerializer(_fields)], ...]


class HandView(_View):
    seat: int
    holder: str | None
    cards: tuple[str, ...]
    done: bool
    revealed: bool


class BetView(_View):
    seat: int
    player: str
    stake: int
    reserved: int


class RoundView(_View):
    round_id: str
    table_id: str
    round_no: int
    profile: str
    profile_version: int
    phase: str
    banker: str | None
    turn: int | None
    commitment: str
    client_seed: str
    nonce: int
    server_seed: str
    bets: tuple[BetView, ...]
    side_bets: tuple[BetView, ...]
    hands: tuple[HandView, ...]
    outcome: str
    version: int
    events: RecordedEvents = ()


class CommandResult(_View):
    """What a command did: the stream it wrote and the events it recorded there."""

    request_id: str
    stream: str  # "round", "table" or "wallet"
    id: str
    events: RecordedEvents
    replayed: bool = False  # True: a retry of a request already carried out
    view: WalletView | TableView | RoundView | None = None  # the stream's view after the command (not on a retry)


class Notification(_View):
    """One event from the application's notification log (every stream, in the order recorded)."""

    position: int
    stream: str
    stream_id: str
    stream_version: int
    kind: str
    data: dict[str, Any]
    timestamp: str
