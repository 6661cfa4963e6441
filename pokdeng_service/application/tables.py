"""Handlers of the table commands: open a table, seats, the banker bid, checkpoints."""

from __future__ import annotations

from pokdeng_core import limits
from pokdeng_core import table as tc
from pokdeng_core import table_commands as tcmd
from pokdeng_core import table_state as ts
from pokdeng_core.errors import DomainError, InvalidCommand
from pokdeng_core.profiles import ProfileError, get_profile
from pokdeng_service.application.attempt import Attempt
from pokdeng_service.application.commands import (
    BidForBanker,
    CheckpointTable,
    CloseBankerBid,
    DisconnectBanker,
    LeaveSeat,
    OpenTable,
    ReconnectBanker,
    TakeSeat,
)
from pokdeng_service.application.errors import AlreadyExists, NotFound, TooManySeatings
from pokdeng_service.application.pipeline import Outcome, handler
from pokdeng_service.application.wallet_port import port_of
from pokdeng_service.store import merkle
from pokdeng_service.store.aggregates import TableRecord


def _outcome(table: TableRecord) -> Outcome:
    return Outcome((table,), table, "table", table.table_id)


def _decide(attempt: Attempt, table_id: str, command: tcmd.TableCommand) -> Outcome:
    table = attempt.table(table_id)
    table.record(tc.decide_and_fold_table(table.state, command), attempt.command_id(table))
    return _outcome(table)


@handler(OpenTable)
def open_table(attempt: Attempt, command: OpenTable) -> Outcome:
    try:
        rules = get_profile(command.profile, command.profile_version, **(command.options or {}))
    except ProfileError as error:
        raise InvalidCommand(str(error), field="profile") from None
    try:
        attempt.table(command.table_id)
    except NotFound:
        pass
    else:
        raise AlreadyExists(f"table {command.table_id!r} already exists", table=command.table_id)
    opening = tcmd.OpenTable(
        command.table_id,
        rules,
        command.min_stake,
        command.max_stake,
        command.seats,
        command.dealer,
        command.turn_timeout,
        command.currency,
    )
    table = TableRecord(command.table_id)
    table.record(tc.decide_and_fold_table(ts.TableState(), opening), attempt.command_id(table))
    return _outcome(table)


@handler(TakeSeat)
def take_seat(attempt: Attempt, command: TakeSeat) -> Outcome:
    taken = dict(attempt.table(command.table_id).state.seatings).get(command.player, 0)
    if taken >= limits.MAX_SEATINGS:
        raise TooManySeatings(
            f"{command.player!r} has taken {taken} seats at table {command.table_id} since its last round "
            f"started, the most one may: sit down again once the next round has started",
            player=command.player,
        )
    return _decide(attempt, command.table_id, tcmd.TakeSeat(command.player, command.seat))


@handler(LeaveSeat)
def leave_seat(attempt: Attempt, command: LeaveSeat) -> Outcome:
    return _decide(attempt, command.table_id, tcmd.LeaveSeat(command.player, command.seat))


@handler(BidForBanker)
def bid_for_banker(attempt: Attempt, command: BidForBanker) -> Outcome:
    table = attempt.table(command.table_id)
    capital = port_of(attempt).funds(attempt, command.player, table.state.currency)  # (docs/wallet.md)
    table.record(
        tc.decide_and_fold_table(table.state, tcmd.BidForBanker(command.player, command.rounds, capital)),
        attempt.command_id(table),
    )
    return _outcome(table)


@handler(CloseBankerBid)
def close_banker_bid(attempt: Attempt, command: CloseBankerBid) -> Outcome:
    return _decide(attempt, command.table_id, tcmd.CloseBankerBid())


@handler(DisconnectBanker)
def disconnect_banker(attempt: Attempt, command: DisconnectBanker) -> Outcome:
    return _decide(attempt, command.table_id, tcmd.DisconnectBanker(command.player))


@handler(ReconnectBanker)
def reconnect_banker(attempt: Attempt, command: ReconnectBanker) -> Outcome:
    """A disconnected player-banker reports its return: within its reconnection window it keeps the role."""
    table = attempt.table(command.table_id)
    within = attempt.app.returned_in_time(table)
    return _decide(attempt, command.table_id, tcmd.ReconnectBanker(command.player, within))


@handler(CheckpointTable)
def checkpoint_table(attempt: Attempt, command: CheckpointTable) -> Outcome:
    """A Merkle root over the table's rounds closed since its last checkpoint (docs/audit.md)."""
    table = attempt.table(command.table_id)
    rounds = attempt.app.finished_rounds(command.table_id, after_round_no=table.state.checkpointed_to)
    if not rounds:
        raise DomainError("no round has closed since the last checkpoint")
    root = merkle.root([merkle.leaf_hash(r, d) for _n, r, d in rounds]).hex()
    label = command.period or f"rounds {rounds[0][0]}-{rounds[-1][0]}"
    checkpoint = tcmd.RecordCheckpoint(label, rounds[0][0], rounds[-1][0], len(rounds), root)
    table.record(tc.decide_and_fold_table(table.state, checkpoint), attempt.command_id(table))
    return _outcome(table)
