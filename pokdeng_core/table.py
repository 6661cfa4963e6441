"""The table as a pure state machine: seats, the banker, the room's banker bid, the round counter.

The same shape as the round (``machine.py``): events in ``table_events.py``, commands in
``table_commands.py``, the state and its fold (``evolve_table(state, event) -> state``) in
``table_state.py``, and here ``decide_table(state, command) -> events`` and
``decide_and_fold_table(state, command) -> TableDecision(events, state)``. Wallet balances come in on
the commands; every limit on what a command may carry is in ``limits.py``. Every name of the events,
commands and state modules (and the limits the table checks) is importable from here too, as it was
when they lived in this module (the public API, README.md); the code of this repository imports them from
their homes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from .currencies import currency_problem
from .deciding import Decision, Run, decide_and_fold
from .errors import DomainError, InsufficientFunds, InvalidCommand, NotYourTurn, UnknownSeat, WrongPhase
from .limits import MAX_ID, MAX_SEATS, MAX_TURN_TIMEOUT, check_id
from .profiles import BankerKind, Profile, ProfileError, get_profile
from .table_commands import (
    BidForBanker,
    CloseBankerBid,
    DisconnectBanker,
    FinishRound,
    LeaveSeat,
    OpenTable,
    ReconnectBanker,
    RecordCheckpoint,
    StartRound,
    TableCommand,
    TakeSeat,
)
from .table_events import (
    TABLE_EVENT_BY_KIND,
    TABLE_EVENT_TYPES,
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
from .table_state import TableState, evolve_table, replay_table

__all__ = (
    "MAX_ID",
    "MAX_SEATS",
    "MAX_TURN_TIMEOUT",
    "TABLE_EVENT_BY_KIND",
    "TABLE_EVENT_TYPES",
    "BankerAssigned",
    "BankerBidLapsed",
    "BankerBidPlaced",
    "BankerDisconnected",
    "BankerReconnected",
    "BankerRoleEnded",
    "BidForBanker",
    "CheckpointRecorded",
    "CloseBankerBid",
    "DisconnectBanker",
    "FinishRound",
    "LeaveSeat",
    "OpenTable",
    "PlayerLeft",
    "PlayerSeated",
    "ReconnectBanker",
    "RecordCheckpoint",
    "RoundFinished",
    "RoundStarted",
    "StartRound",
    "TableCommand",
    "TableDecision",
    "TableEvent",
    "TableOpened",
    "TableState",
    "TakeSeat",
    "decide_and_fold_table",
    "decide_table",
    "evolve_table",
    "replay_table",
    "winning_bid",
)

# --- decide --------------------------------------------------------------------------------


TableDecision = Decision
"""What ``decide_and_fold_table`` gives (``deciding.Decision``): the events a command causes, and the state
after them (``replay_table(events, state)`` of the state decided on, as the decision computed it)."""
_Run = Run[TableState, TableEvent]


def decide_table(state: TableState, command: TableCommand) -> tuple[TableEvent, ...]:
    """The events ``command`` causes at the table; raises ``DomainError`` (and records nothing) if refused."""
    return decide_and_fold_table(state, command).events


def decide_and_fold_table(state: TableState, command: TableCommand) -> Decision[TableState, TableEvent]:
    """``decide_table``, and the state after folding its events: ``events, after = decide_and_fold_table(...)``."""
    return decide_and_fold(_HANDLERS, Run(state, evolve_table), command, "table")


def _idle(state: TableState, doing: str) -> None:
    if not state.is_open:
        raise WrongPhase("the table is not open")
    if state.round_id is not None:
        raise WrongPhase(f"cannot {doing} while round {state.round_id} is in play", round_id=state.round_id)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _registered(profile: object) -> Profile:
    """The profile itself, if it is a registered preset: the table's events name it and replay rebuilds it."""
    if not isinstance(profile, Profile):
        raise InvalidCommand("a table needs a rule profile", field="profile")
    try:
        preset = get_profile(profile.name, profile.version, **profile.options)
    except ProfileError as error:
        raise InvalidCommand(str(error), field="profile") from None
    if preset != profile:
        raise InvalidCommand(f"{profile.key} differs from the registered profile of that name", field="profile")
    return preset


def _open_table(run: _Run, cmd: OpenTable) -> None:
    if run.state.is_open:
        raise WrongPhase(f"table {run.state.table_id} is already open")
    check_id(cmd.table_id, "table_id")
    profile = _registered(cmd.profile)
    if not (_is_int(cmd.min_stake) and _is_int(cmd.max_stake)):
        raise InvalidCommand("stake limits are whole numbers of minor units", field="min_stake")
    if not 0 < cmd.min_stake <= cmd.max_stake:
        field = "min_stake" if cmd.min_stake <= 0 else "max_stake"
        raise InvalidCommand("stake limits must satisfy 0 < min_stake <= max_stake", field=field)
    if profile.wager_split and (cmd.min_stake % 2 or cmd.max_stake % 2):
        field = "min_stake" if cmd.min_stake % 2 else "max_stake"
        raise InvalidCommand(f"ante wagers are split in two: {field} must be even", field=field)
    seats = profile.fixed_positions or cmd.seats
    most = min(MAX_SEATS, profile.max_hands)
    if not _is_int(seats) or not 1 <= seats <= most:
        raise InvalidCommand(f"{profile.name} allows 1 to {most} seats", field="seats")
    if cmd.dealer is not None:
        if profile.name != "classic":
            raise InvalidCommand("only a classic table names a player as dealer", field="dealer")
        check_id(cmd.dealer, "dealer")
    if not _is_int(cmd.turn_timeout) or not 1 <= cmd.turn_timeout <= MAX_TURN_TIMEOUT:
        raise InvalidCommand(f"the turn timeout is 1 to {MAX_TURN_TIMEOUT} seconds", field="turn_timeout")
    problem = currency_problem(cmd.currency, "currency")
    if problem is not None:
        raise InvalidCommand(problem, field="currency")
    run.emit(
        TableOpened(
            cmd.table_id,
            profile.name,
            profile.version,
            tuple(sorted(profile.options.items())),
            cmd.min_stake,
            cmd.max_stake,
            seats,
            cmd.dealer,
            cmd.turn_timeout,
            cmd.currency,
        )
    )


def _take_seat(run: _Run, cmd: TakeSeat) -> None:
    state = run.state
    if not state.is_open:
        raise WrongPhase("the table is not open")
    profile = state.rules
    if profile.fixed_positions is not None:
        raise DomainError(f"{profile.name} has betting positions, not seats: bet on a position directly")
    check_id(cmd.player, "player")
    if not _is_int(cmd.seat) or not 1 <= cmd.seat <= state.seat_count:
        raise UnknownSeat(f"seat {cmd.seat} is not at this table (seats 1 to {state.seat_count})", seat=cmd.seat)
    if state.holder(cmd.seat) is not None:
        raise DomainError(f"seat {cmd.seat} is taken", seat=cmd.seat)
    if cmd.player in (state.banker, state.dealer):
        raise DomainError("the banker cannot take a player's seat")
    if len(state.seats_of(cmd.player)) >= profile.seats_per_player:
        raise DomainError(f"{cmd.player!r} already holds {profile.seats_per_player} seat(s) at this table")
    run.emit(PlayerSeated(cmd.seat, cmd.player))


def _leave_seat(run: _Run, cmd: LeaveSeat) -> None:
    state = run.state
    _idle(state, "leave")
    if state.banker == cmd.player and cmd.seat is None:
        run.emit(BankerRoleEnded(cmd.player, "left"))
    seats = state.seats_of(cmd.player) if cmd.seat is None else (cmd.seat,)
    if cmd.seat is not None and (not _is_int(cmd.seat) or state.holder(cmd.seat) != cmd.player):
        raise NotYourTurn(f"seat {cmd.seat} is not held by {cmd.player!r}", seat=cmd.seat)
    if not seats and not run.events:
        raise UnknownSeat(f"{cmd.player!r} holds no seat at this table")
    for seat in seats:
        run.emit(PlayerLeft(seat, cmd.player, "left"))


def _bid(run: _Run, cmd: BidForBanker) -> None:
    state = run.state
    _idle(state, "bid for banker")
    rule = state.rules.banker_bid
    if rule is None:
        raise DomainError(f"{state.rules.name} has no banker bid")
    if state.banker is not None:
        raise WrongPhase(f"{state.banker!r} is the banker: bidding opens when the role ends")
    if not state.seats_of(cmd.player):
        raise NotYourTurn("only a seated player may bid for banker")
    if not _is_int(cmd.rounds) or cmd.rounds not in (*rule.tenures, 0):
        choices = ", ".join(str(t) for t in rule.tenures)
        raise InvalidCommand(f"bid {choices} rounds, or 0 to skip", field="rounds")
    if not _is_int(cmd.capital) or cmd.capital < 0:
        raise InvalidCommand("capital is a whole, non-negative number of minor units", field="capital")
    if any(p == cmd.player for p, _, _ in state.bids):
        raise DomainError(f"{cmd.player!r} has already bid")
    if cmd.rounds and cmd.capital < state.banker_minimum:
        raise InsufficientFunds(
            f"bidding for banker needs {state.banker_minimum} available: {cmd.capital} available",
            required=state.banker_minimum,
            available=cmd.capital,
            wallet=cmd.player,
        )
    run.emit(BankerBidPlaced(cmd.player, cmd.rounds, cmd.capital))


def winning_bid(bids: Iterable[tuple[str, int, int]]) -> tuple[str, int] | None:
    """The highest tenure wins; a tie goes to the larger capital, then to the earlier bid."""
    best: tuple[int, int, int] | None = None
    winner: tuple[str, int] | None = None
    for order, (player, rounds, capital) in enumerate(bids):
        if rounds <= 0:
            continue
        key = (rounds, capital, -order)
        if best is None or key > best:
            best, winner = key, (player, rounds)
    return winner


def _close_bid(run: _Run, _cmd: CloseBankerBid) -> None:
    state = run.state
    _idle(state, "close the banker bid")
    if state.rules.banker_bid is None:
        raise DomainError(f"{state.rules.name} has no banker bid")
    if state.banker is not None:
        raise WrongPhase(f"{state.banker!r} is already the banker")
    winner = winning_bid(state.bids)
    if winner is None:
        if not state.bids:
            raise DomainError("no player has bid for banker: the next round cannot start")
        run.emit(BankerBidLapsed(tuple(p for p, _r, _c in state.bids)))
        return
    player, rounds = winner
    for seat in state.seats_of(player):
        run.emit(PlayerLeft(seat, player, "became_banker"))
    run.emit(BankerAssigned(player, rounds))


def _start_round(run: _Run, cmd: StartRound) -> None:
    state = run.state
    _idle(state, "start a round")
    profile = state.rules
    no = state.round_no + 1
    expected = f"{state.table_id}#{no}"
    if cmd.round_id != expected:
        raise InvalidCommand(f"the table's next round is {expected!r}, not {cmd.round_id!r}", field="round_id")
    funds = dict(cmd.funds)
    if profile.banker_bid is not None:
        if state.banker is None:
            raise WrongPhase("the room has no banker: hold the banker bid first")
        for seat, player in state.seats:
            if player in funds and funds[player] < state.player_minimum:
                run.emit(PlayerLeft(seat, player, "insufficient_funds"))
    if profile.fixed_positions is None and not run.state.seats:
        if run.events:  # every seated player was short of funds: unseated, and no round starts
            return
        raise DomainError("no player is seated: nobody to deal to")
    if state.banker is not None and cmd.banker_funds is not None and cmd.banker_funds < run.state.banker_minimum:
        run.emit(BankerRoleEnded(state.banker, "insufficient_funds"))  # no round opens: the room needs a bid
        return
    if BankerKind.HOUSE not in profile.banker and run.state.round_banker is None:
        raise WrongPhase(f"{profile.name} needs a player banker")
    run.emit(RoundStarted(cmd.round_id, no, no))


def _finish_round(run: _Run, cmd: FinishRound) -> None:
    state = run.state
    if state.round_id != cmd.round_id:
        raise WrongPhase(f"round {cmd.round_id} is not this table's current round")
    run.emit(RoundFinished(cmd.round_id, cmd.outcome, cmd.house_net, cmd.commission, cmd.round_digest))
    after = run.state
    banker = after.banker
    if banker is None:
        return
    if after.banker_leaving:
        run.emit(BankerRoleEnded(banker, "disconnected"))
    elif cmd.banker_funds is not None and cmd.banker_funds < after.banker_minimum:
        run.emit(BankerRoleEnded(banker, "insufficient_funds"))
    elif after.tenure_left <= 0:
        run.emit(BankerRoleEnded(banker, "tenure_served"))


def _disconnect(run: _Run, cmd: DisconnectBanker) -> None:
    state = run.state
    if state.banker != cmd.player:
        raise NotYourTurn(f"{cmd.player!r} is not the banker")
    if state.round_id is None:
        run.emit(BankerRoleEnded(cmd.player, "disconnected"))
    else:
        run.emit(BankerDisconnected(cmd.player))


def _reconnect(run: _Run, cmd: ReconnectBanker) -> None:
    state = run.state
    if state.banker != cmd.player:
        raise NotYourTurn(f"{cmd.player!r} is not the banker")
    if not state.banker_leaving:
        raise WrongPhase(f"banker {cmd.player!r} is not disconnected")
    if not cmd.within_window:
        raise WrongPhase(
            f"banker {cmd.player!r} came back after its reconnection window: its turn is played for it "
            "and the role ends when the round ends"
        )
    run.emit(BankerReconnected(cmd.player))


def _checkpoint(run: _Run, cmd: RecordCheckpoint) -> None:
    state = run.state
    if not state.is_open:
        raise WrongPhase("the table is not open")
    if cmd.first_round_no != state.checkpointed_to + 1 or cmd.last_round_no < cmd.first_round_no:
        raise InvalidCommand(f"a checkpoint continues from round {state.checkpointed_to + 1}", field="first_round_no")
    closed = state.round_no - (state.round_id is not None)  # the last closed round
    if cmd.last_round_no > closed:
        raise InvalidCommand(
            f"round {cmd.last_round_no} has not closed: the last closed round is {closed}", field="last_round_no"
        )
    if cmd.count < 1 or cmd.count != cmd.last_round_no - cmd.first_round_no + 1:
        raise InvalidCommand("a checkpoint covers every round of its range, at least one", field="count")
    if len(cmd.root) != 64 or any(ch not in "0123456789abcdef" for ch in cmd.root):
        raise InvalidCommand("a checkpoint root is a SHA-256 digest in lowercase hex", field="root")
    run.emit(CheckpointRecorded(cmd.period, cmd.first_round_no, cmd.last_round_no, cmd.count, cmd.root))


_HANDLERS: Mapping[type[Any], Callable[[_Run, Any], None]] = MappingProxyType(
    {
        OpenTable: _open_table,
        TakeSeat: _take_seat,
        LeaveSeat: _leave_seat,
        BidForBanker: _bid,
        CloseBankerBid: _close_bid,
        StartRound: _start_round,
        FinishRound: _finish_round,
        DisconnectBanker: _disconnect,
        ReconnectBanker: _reconnect,
        RecordCheckpoint: _checkpoint,
    }
)
