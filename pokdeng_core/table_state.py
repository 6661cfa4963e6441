"""The table's state: its seats, banker, bids and round counter as its events say, and its fold
(``evolve_table(state, event) -> state``, ``replay_table``). ``table.py`` decides on it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from .currencies import DEFAULT as DEFAULT_CURRENCY
from .errors import WrongPhase
from .limits import DEFAULT_TURN_TIMEOUT
from .profiles import Profile, get_profile
from .table_events import (
    BankerAssigned,
    BankerBidLapsed,
    BankerBidPlaced,
    BankerDisconnected,
    BankerReconnected,
    BankerRoleEnded,
    CheckpointRecorded,
    PlayerLeft,
    PlayerSeated,
    RoundFinished,
    RoundStarted,
    TableEvent,
    TableOpened,
)


@dataclass(frozen=True, slots=True)
class TableState:
    table_id: str = ""
    profile: Profile | None = None
    min_stake: int = 0
    max_stake: int = 0
    seat_count: int = 0
    dealer: str | None = None
    turn_timeout: int = DEFAULT_TURN_TIMEOUT
    currency: str = DEFAULT_CURRENCY
    seats: tuple[tuple[int, str], ...] = ()
    banker: str | None = None
    tenure_left: int = 0
    banker_leaving: bool = False
    bids: tuple[tuple[str, int, int], ...] = ()  # (player, rounds, capital) in bid order
    round_id: str | None = None
    round_no: int = 0
    house_net: int = 0
    commission: int = 0
    checkpointed_to: int = 0  # the last round number covered by a checkpoint
    seatings: tuple[tuple[str, int], ...] = ()  # (player, seats taken) since the last round started: the
    # service bounds them (``limits.MAX_SEATINGS``), so no player grows the table's stream without end

    @property
    def rules(self) -> Profile:
        if self.profile is None:
            raise WrongPhase("the table is not open")
        return self.profile

    @property
    def is_open(self) -> bool:
        return self.profile is not None

    def holder(self, seat: int) -> str | None:
        return dict(self.seats).get(seat)

    def seats_of(self, player: str) -> tuple[int, ...]:
        return tuple(s for s, p in self.seats if p == player)

    @property
    def players(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for _, player in self.seats:
            seen.setdefault(player)
        return tuple(seen)

    @property
    def needs_bid(self) -> bool:
        """Room: no banker yet, so the next round waits for a banker bid."""
        return self.rules.banker_bid is not None and self.banker is None

    @property
    def player_minimum(self) -> int:
        """Room: the available funds a seated player needs when a round starts: room stake x reserve multiple."""
        return self.max_stake * self.rules.reserve_multiple

    @property
    def banker_minimum(self) -> int:
        """The room's banker capital: room stake x number of seated players."""
        return self.max_stake * max(1, len(self.players))

    def round_seats(self) -> tuple[tuple[int, str | None], ...]:
        """The seats a round is dealt to: the table's seats, or ante's fixed betting positions."""
        positions = self.rules.fixed_positions
        if positions is not None:
            return tuple((p, None) for p in range(1, positions + 1))
        return self.seats

    @property
    def round_banker(self) -> str | None:
        return self.banker if self.banker is not None else self.dealer


def evolve_table(state: TableState, event: TableEvent) -> TableState:
    if isinstance(event, TableOpened):
        return _opened(state, event)
    if isinstance(event, PlayerSeated):
        return _seated(state, event)
    if isinstance(event, PlayerLeft):
        return _left(state, event)
    if isinstance(event, BankerBidPlaced):
        return replace(state, bids=(*state.bids, (event.player, event.rounds, event.capital)))
    if isinstance(event, BankerAssigned):
        return replace(state, banker=event.player, tenure_left=event.rounds, bids=(), banker_leaving=False)
    if isinstance(event, BankerRoleEnded):
        return replace(state, banker=None, tenure_left=0, bids=(), banker_leaving=False)
    if isinstance(event, BankerBidLapsed):
        return replace(state, bids=())
    if isinstance(event, BankerDisconnected):
        return replace(state, banker_leaving=True)
    if isinstance(event, BankerReconnected):
        return replace(state, banker_leaving=False)
    if isinstance(event, RoundStarted):
        return replace(state, round_id=event.round_id, round_no=event.round_no, seatings=())
    if isinstance(event, RoundFinished):
        return _round_finished(state, event)
    if isinstance(event, CheckpointRecorded):
        return replace(state, checkpointed_to=event.last_round_no)
    raise TypeError(f"not a table event: {event!r}")


def _opened(state: TableState, event: TableOpened) -> TableState:
    profile = get_profile(event.profile_name, event.profile_version, **dict(event.profile_options))
    return replace(
        state,
        table_id=event.table_id,
        profile=profile,
        min_stake=event.min_stake,
        max_stake=event.max_stake,
        seat_count=event.seats,
        dealer=event.dealer,
        turn_timeout=event.turn_timeout,
        currency=event.currency,
    )


def _seated(state: TableState, event: PlayerSeated) -> TableState:
    taken = dict(state.seatings)
    taken[event.player] = taken.get(event.player, 0) + 1
    seats = tuple(sorted((*state.seats, (event.seat, event.player))))
    return replace(state, seats=seats, seatings=tuple(sorted(taken.items())))


def _left(state: TableState, event: PlayerLeft) -> TableState:
    seats = tuple(s for s in state.seats if s != (event.seat, event.player))
    bids = state.bids
    if all(p != event.player for _, p in seats):
        bids = tuple(b for b in bids if b[0] != event.player)  # a bid lapses when its player leaves the table
    return replace(state, seats=seats, bids=bids)


def _round_finished(state: TableState, event: RoundFinished) -> TableState:
    tenure = state.tenure_left - 1 if state.banker is not None and state.tenure_left > 0 else state.tenure_left
    return replace(
        state,
        round_id=None,
        tenure_left=tenure,
        house_net=state.house_net + event.house_net,
        commission=state.commission + event.commission,
    )


def replay_table(events: Iterable[TableEvent], state: TableState | None = None) -> TableState:
    """Fold a stream of table events from an empty (or the given) state."""
    current = state or TableState()
    for event in events:
        current = evolve_table(current, event)
    return current
