"""What the application returns: plain, serialisable views (pydantic models)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class _View(BaseModel):
    model_config = ConfigDict(frozen=True)


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


class RecordedEvent(_View):
    """One stored event of a stream: its position, kind, payload, cause, time and chain digest."""

    position: int
    kind: str
    data: dict[str, Any]
    command_id: str
    timestamp: str
    digest: str


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
    events: tuple[RecordedEvent, ...] = ()


class CommandResult(_View):
    """What a command did: the stream it wrote and the events it recorded there."""

    request_id: str
    stream: str  # "round", "table" or "wallet"
    id: str
    events: tuple[RecordedEvent, ...]
    replayed: bool = False  # True: a retry of a request already carried out


class Notification(_View):
    """One event from the application's notification log (every stream, in the order recorded)."""

    position: int
    stream: str
    stream_id: str
    stream_version: int
    kind: str
    data: dict[str, Any]
    timestamp: str
