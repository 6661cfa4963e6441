"""The table's commands: what a player or the operator asks of a table, in the imperative.

Wallet balances are facts from outside the pure core: a command that needs them carries them,
as the shell read them (``table.py`` decides).
"""

from __future__ import annotations

from dataclasses import dataclass

from .currencies import DEFAULT as DEFAULT_CURRENCY
from .limits import DEFAULT_TURN_TIMEOUT
from .profiles import Profile


@dataclass(frozen=True, slots=True)
class OpenTable:
    table_id: str
    profile: Profile
    min_stake: int
    max_stake: int
    seats: int
    dealer: str | None = None
    turn_timeout: int = DEFAULT_TURN_TIMEOUT  # seconds
    currency: str = DEFAULT_CURRENCY  # ISO 4217: every stake at the table is in it


@dataclass(frozen=True, slots=True)
class TakeSeat:
    player: str
    seat: int


@dataclass(frozen=True, slots=True)
class LeaveSeat:
    player: str
    seat: int | None = None  # None: every seat the player holds (and the banker's role)


@dataclass(frozen=True, slots=True)
class BidForBanker:
    player: str
    rounds: int  # one of the profile's tenures, or 0 to skip
    capital: int  # the player's available funds


@dataclass(frozen=True, slots=True)
class CloseBankerBid:
    pass


@dataclass(frozen=True, slots=True)
class StartRound:
    """Begin the next round. ``funds`` gives each seated player's available funds, ``banker_funds`` the room
    banker's (None: not known, not checked)."""

    round_id: str
    funds: tuple[tuple[str, int], ...] = ()
    banker_funds: int | None = None


@dataclass(frozen=True, slots=True)
class FinishRound:
    round_id: str
    outcome: str
    house_net: int = 0
    commission: int = 0
    banker_funds: int | None = None
    round_digest: str = ""


@dataclass(frozen=True, slots=True)
class DisconnectBanker:
    player: str


@dataclass(frozen=True, slots=True)
class ReconnectBanker:
    """A disconnected banker is back. ``within_window``: whether it came back within its profile's
    reconnection window of the disconnection (the shell measures the time: the core has no clock)."""

    player: str
    within_window: bool


@dataclass(frozen=True, slots=True)
class RecordCheckpoint:
    period: str
    first_round_no: int
    last_round_no: int
    count: int
    root: str


TableCommand = (
    OpenTable
    | TakeSeat
    | LeaveSeat
    | BidForBanker
    | CloseBankerBid
    | StartRound
    | FinishRound
    | DisconnectBanker
    | ReconnectBanker
    | RecordCheckpoint
)
