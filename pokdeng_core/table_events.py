"""The table's events: immutable facts in the past tense (docs/events.md is the catalogue).

Fields are plain values (str, int, bool, tuples), as in the round's events (``events.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar


@dataclass(frozen=True, slots=True)
class TableEvent:
    kind: ClassVar[str] = "table_event"


@dataclass(frozen=True, slots=True)
class TableOpened(TableEvent):
    kind: ClassVar[str] = "table_opened"
    table_id: str
    profile_name: str
    profile_version: int
    profile_options: tuple[tuple[str, bool], ...]
    min_stake: int
    max_stake: int
    seats: int
    dealer: str | None  # classic: a player named as dealer; None: the house (or, in room, the bid winner)
    turn_timeout: int  # seconds
    currency: str = "THB"  # ISO 4217 (tables opened before currencies: THB)


@dataclass(frozen=True, slots=True)
class PlayerSeated(TableEvent):
    kind: ClassVar[str] = "player_seated"
    seat: int
    player: str


@dataclass(frozen=True, slots=True)
class PlayerLeft(TableEvent):
    kind: ClassVar[str] = "player_left"
    seat: int
    player: str
    reason: str  # "left" or "insufficient_funds"


@dataclass(frozen=True, slots=True)
class BankerBidPlaced(TableEvent):
    kind: ClassVar[str] = "banker_bid_placed"
    player: str
    rounds: int  # 0: skip
    capital: int


@dataclass(frozen=True, slots=True)
class BankerAssigned(TableEvent):
    kind: ClassVar[str] = "banker_assigned"
    player: str
    rounds: int


@dataclass(frozen=True, slots=True)
class BankerRoleEnded(TableEvent):
    kind: ClassVar[str] = "banker_role_ended"
    player: str
    reason: str  # "tenure_served", "insufficient_funds", "left", "disconnected", "no_bids"


@dataclass(frozen=True, slots=True)
class BankerBidLapsed(TableEvent):
    """Every bidder skipped: the bids are cleared and a new bidding round is open."""

    kind: ClassVar[str] = "banker_bid_lapsed"
    skipped: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class BankerDisconnected(TableEvent):
    kind: ClassVar[str] = "banker_disconnected"
    player: str


@dataclass(frozen=True, slots=True)
class BankerReconnected(TableEvent):
    """A disconnected banker came back within its reconnection window: it plays on and keeps the role."""

    kind: ClassVar[str] = "banker_reconnected"
    player: str


@dataclass(frozen=True, slots=True)
class RoundStarted(TableEvent):
    kind: ClassVar[str] = "round_started"
    round_id: str
    round_no: int
    nonce: int


@dataclass(frozen=True, slots=True)
class RoundFinished(TableEvent):
    """A round of the table ended; ``house_net`` and ``commission`` book the house's side of it."""

    kind: ClassVar[str] = "round_finished"
    round_id: str
    outcome: str
    house_net: int
    commission: int
    round_digest: str = ""  # the round stream's last chain digest: pins the whole round record


@dataclass(frozen=True, slots=True)
class CheckpointRecorded(TableEvent):
    """A Merkle root over the table's closed rounds ``first_round_no..last_round_no`` (docs/audit.md)."""

    kind: ClassVar[str] = "checkpoint_recorded"
    period: str
    first_round_no: int
    last_round_no: int
    count: int
    root: str


TABLE_EVENT_TYPES: tuple[type[TableEvent], ...] = (
    TableOpened,
    PlayerSeated,
    PlayerLeft,
    BankerBidPlaced,
    BankerAssigned,
    BankerRoleEnded,
    BankerBidLapsed,
    BankerDisconnected,
    BankerReconnected,
    RoundStarted,
    RoundFinished,
    CheckpointRecorded,
)
TABLE_EVENT_BY_KIND: Mapping[str, type[TableEvent]] = MappingProxyType({cls.kind: cls for cls in TABLE_EVENT_TYPES})
"""Each table event class by its ``kind`` (read-only: the kinds are written once, in the classes)."""
