"""Handlers of the round commands: start a round, bets, the deal, the hands' and banker's choices, voids.

Money moves only in the transaction that settles or voids a round: the round's
``RoundSettled`` (or ``RoundVoided``) event, every wallet's release-and-apply event and the
table's ledger entry are saved together. Stakes are reserved in the bet's own transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from eventsourcing.domain import Aggregate

from pokdeng_core import commands as rc
from pokdeng_core import events as re
from pokdeng_core import table as tc
from pokdeng_core import table_commands as tcmd
from pokdeng_core import table_events as te
from pokdeng_core.errors import CurrencyMismatch, DomainError, WrongPhase
from pokdeng_core.limits import MAX_CONTRIBUTIONS
from pokdeng_core.machine import decide_and_fold
from pokdeng_core.round_state import Phase, RoundState
from pokdeng_core.shuffle import CLIENT_SEED_RULE, PLATFORM, SHUFFLE_ALGORITHM, commitment
from pokdeng_service.application.attempt import Attempt
from pokdeng_service.application.checkpoints import log_closed_round
from pokdeng_service.application.commands import StartRound
from pokdeng_service.application.errors import BankerCannotCover, PermissionDenied, TooManyContributions
from pokdeng_service.application.pipeline import Outcome, Refused, handler
from pokdeng_service.application.round_commands import (
    BankerDraw,
    BankerReveal,
    BankerStay,
    CloseSideBets,
    ContributeSeed,
    Deal,
    Draw,
    PlaceBet,
    PlaceSideBet,
    RoundCommand,
    Stay,
    TimeOutTurn,
    VoidRound,
)
from pokdeng_service.application.wallet_port import port_of
from pokdeng_service.store.aggregates import RoundRecord, SealedSeed, TableRecord
from pokdeng_service.store.vault import SEAL_AAD_VERSION, VaultError, fresh_seed

log = logging.getLogger("pokdeng.rounds")


@handler(StartRound)
def start_round(attempt: Attempt, command: StartRound) -> Outcome:
    """The table's next round: a fresh server seed is sealed and its commitment recorded; the client seed
    is contributed during betting and fixed at the deal (``client_seed``, if any, is the platform's)."""
    table = attempt.table(command.table_id)
    state = table.state
    round_id = f"{command.table_id}#{state.round_no + 1}"
    funds: list[tuple[str, int]] = []
    banker_funds = None
    if state.rules.banker_bid is not None:
        port = port_of(attempt)  # (the store's wallets, or the platform's: docs/wallet.md)
        funds = [(player, port.funds(attempt, player, state.currency, missing_ok=True)) for player in state.players]
        if state.banker is not None:
            banker_funds = port.funds(attempt, state.banker, state.currency, missing_ok=True)
    decision = tc.decide_and_fold_table(state, tcmd.StartRound(round_id, tuple(funds), banker_funds))
    if decision.state.round_no == state.round_no:  # room: the banker, or every player, could not cover the round
        return _start_refused(table, decision, round_id)
    table.record(decision, attempt.command_id(table))
    state = table.state
    seed = fresh_seed()
    opening = rc.OpenRound(
        round_id,
        command.table_id,
        state.round_no,
        state.rules,
        state.round_seats(),
        state.round_banker,
        state.min_stake,
        state.max_stake,
        commitment(seed),
        command.client_seed,
        state.round_no,
        SHUFFLE_ALGORITHM,
        CLIENT_SEED_RULE,
        state.currency,
        attempt.principal.actor,
    )
    record = RoundRecord(round_id, command.table_id)
    record.record(decide_and_fold(record.state, opening), attempt.command_id(record))
    vault = attempt.app.vault
    nonce, sealed = vault.seal(seed, round_id, record.id)  # bound to this round's stream
    sealed_seed = SealedSeed(round_id, nonce, sealed, vault.key_id, SEAL_AAD_VERSION)
    return Outcome((table, record, sealed_seed), record, "round", round_id)


def _start_refused(table: TableRecord, decision: tc.TableDecision, round_id: str) -> Outcome:
    """A room's StartRound that opens no round, and still records what it found (docs/rules.md, rule 11): the
    banker cannot cover the round (its role ended), or every seated player was short of funds (all unseated).
    The facts are the service's own request, named after the table's state; the start is refused."""
    request_id = f"start-refused:{table.table_id}@{table.version}"
    table.record(decision, request_id)
    ended = [e.player for e in decision.events if isinstance(e, te.BankerRoleEnded)]
    error: Exception
    if ended:
        error = BankerCannotCover(
            f"the room's banker {ended[0]!r} cannot cover round {round_id}: its role ended (banker_role_ended, "
            f"insufficient_funds) and no round started; hold the banker bid, then start the round",
            table_id=table.table_id,
            banker=ended[0],
        )
    else:
        left = ", ".join(repr(e.player) for e in decision.events if isinstance(e, te.PlayerLeft))
        error = DomainError(
            f"no player is seated: {left} could not cover {table.state.player_minimum} "
            f"and left the table (player_left, insufficient_funds); nobody to deal to",
            table_id=table.table_id,
        )
    return Outcome((table,), table, "table", table.table_id, Refused(error, request_id))


CoreCommand = Callable[[Attempt, RoundState], rc.RoundCommand]


def sent_by(attempt: Attempt, command: RoundCommand) -> str:
    """The ``by`` of a decision sent for a player, a contributor or the banker's hand (``command.actor``: the
    player it acts for; None for the platform's contribution and the house's hand): ``""`` when that player
    sends it itself (its own token), else the sender's ``Principal.actor`` (an operator, the service)."""
    principal = attempt.principal
    if principal.is_player and command.actor is not None and principal.player == command.actor:
        return ""
    return principal.actor


def _play(attempt: Attempt, command: RoundCommand, make: CoreCommand, expected_version: int | None = None) -> Outcome:
    """Load the round, decide the core command ``make`` gives, record it, and book its money."""
    record = attempt.round(command.round_id)
    if expected_version is not None and record.version != expected_version:
        raise WrongPhase(
            f"round {command.round_id} has moved on (version {record.version}, not {expected_version})",
            version=record.version,
        )
    decision = decide_and_fold(record.state, make(attempt, record.state))
    record.record(decision, attempt.command_id(record))
    touched = _book_money(attempt, record, decision.events)
    touched += [t for t in attempt.tables() if t.pending_events and t not in touched]  # a banker's return
    return Outcome((record, *touched), record, "round", command.round_id)


def _book_money(attempt: Attempt, record: RoundRecord, events: Iterable[re.RoundEvent]) -> list[Aggregate]:
    """Book the round's money events through the wallet port (``application.wallet_port``: the store's wallets, or the
    platform's) and, at the close, on the table's ledger."""
    round_id = record.round_id
    port = port_of(attempt)
    closed: re.RoundClosed | None = None
    house_net = commission = 0
    for event in events:
        if isinstance(event, re.BetPlaced):
            port.reserve(attempt, record, event.player, event.reserved, ("bet", event.seat, event.player))
            if event.banker_reserved:
                banker = record.state.banker_player
                assert banker is not None
                port.reserve(attempt, record, banker, event.banker_reserved, ("cover", event.seat, event.player))
        elif isinstance(event, re.SideBetPlaced):
            port.reserve(attempt, record, event.player, event.reserved, ("side", event.seat, event.player))
        elif isinstance(event, re.RoundSettled):
            for player, reserved, net in event.wallets:
                port.settle(attempt, record, player, reserved, net)
            house_net, commission = event.house_net, event.commission
        elif isinstance(event, re.RoundVoided):
            for player, reserved in event.wallets:
                port.release(attempt, record, player, reserved, "round_voided")
        elif isinstance(event, re.RoundClosed):
            closed = event
    touched: list[Aggregate] = port.touched(attempt)
    if closed is not None:
        table = attempt.table(record.table_id)
        banker = record.state.banker_player
        banker_funds = port.closing_funds(attempt, record, banker) if banker else None
        finish = tcmd.FinishRound(round_id, closed.outcome, house_net, commission, banker_funds, record.last_digest)
        table.record(tc.decide_and_fold_table(table.state, finish), attempt.command_id(table))
        touched.append(table)
        touched.append(log_closed_round(attempt, record))  # the store's log of closed rounds
    return touched


@handler(PlaceBet)
def place_bet(attempt: Attempt, command: PlaceBet) -> Outcome:
    by = sent_by(attempt, command)

    def make(attempt: Attempt, state: RoundState) -> rc.RoundCommand:
        if command.client_seed is not None:  # a stake's contribution counts against the contributor's bound
            _check_contributions(state, command.round_id, command.player)
        funds = port_of(attempt).stake_funds(attempt, command.round_id)  # the platform's: its debit was the check
        if funds is not None:
            banker_funds = funds if state.banker_player is not None else None
            return rc.PlaceBet(
                command.seat, command.player, command.stake, funds, banker_funds, command.client_seed, by
            )
        wallet = attempt.wallet(command.player)
        banker = state.banker_player
        banker_wallet = attempt.wallet(banker) if banker is not None else None
        for who in (wallet, banker_wallet):
            if who is not None and who.currency != state.currency:
                raise CurrencyMismatch(
                    f"wallet {who.wallet_id!r} holds {who.currency}; round {command.round_id} is played in "
                    f"{state.currency}",
                    wallet=who.wallet_id,
                    wallet_currency=who.currency,
                    table_currency=state.currency,
                )
        available = wallet.available
        banker_available = banker_wallet.available if banker_wallet is not None else None
        return rc.PlaceBet(
            command.seat, command.player, command.stake, available, banker_available, command.client_seed, by
        )

    return _play(attempt, command, make)


@handler(ContributeSeed)
def contribute_seed(attempt: Attempt, command: ContributeSeed) -> Outcome:
    """A bettor's (or the platform's) contribution to the round's client seed, until the deal."""
    by = sent_by(attempt, command)

    def make(_attempt: Attempt, state: RoundState) -> rc.RoundCommand:
        _check_contributions(state, command.round_id, command.contributor)
        return rc.ContributeSeed(command.contributor, command.client_seed, by)

    return _play(attempt, command, make)


def _check_contributions(state: RoundState, round_id: str, contributor: str | None) -> None:
    """``TooManyContributions`` when ``contributor`` (None: the platform) has sent the round the most
    contributions one may, a bet's included (``limits.MAX_CONTRIBUTIONS``); in betting only (after it,
    the core refuses any contribution for the phase)."""
    sent = dict(state.contributions_sent).get(PLATFORM if contributor is None else contributor, 0)
    if state.phase is Phase.BETTING and sent >= MAX_CONTRIBUTIONS:
        who = "the platform" if contributor is None else repr(contributor)
        raise TooManyContributions(
            f"{who} has sent round {round_id} {sent} contributions to its client seed, the most one may (its "
            "last one counts)",
            player=contributor or "",
        )


@handler(PlaceSideBet)
def place_side_bet(attempt: Attempt, command: PlaceSideBet) -> Outcome:
    return _play(
        attempt,
        command,
        lambda a, _s: rc.PlaceSideBet(command.seat, command.player, _side_funds(a, command), sent_by(a, command)),
    )


def _side_funds(attempt: Attempt, command: PlaceSideBet) -> int:
    funds = port_of(attempt).stake_funds(attempt, command.round_id)
    return attempt.wallet(command.player).available if funds is None else funds


@handler(Deal)
def deal(attempt: Attempt, command: Deal) -> Outcome:
    return _play(attempt, command, lambda a, _s: rc.Deal(a.principal.actor))


@handler(CloseSideBets)
def close_side_bets(attempt: Attempt, command: CloseSideBets) -> Outcome:
    return _play(attempt, command, lambda a, _s: rc.CloseSideBets(a.principal.actor))


@handler(Draw)
def draw(attempt: Attempt, command: Draw) -> Outcome:
    return _play(attempt, command, lambda a, _s: rc.Draw(command.seat, command.player, sent_by(a, command)))


@handler(Stay)
def stay(attempt: Attempt, command: Stay) -> Outcome:
    return _play(attempt, command, lambda a, _s: rc.Stay(command.seat, command.player, sent_by(a, command)))


def _as_banker(attempt: Attempt, command: BankerReveal | BankerDraw | BankerStay, state: RoundState) -> str | None:
    """The banker argument of the core command; a player must be this round's player-banker itself."""
    principal = attempt.principal
    if principal.is_player and state.banker_player != principal.player:
        raise PermissionDenied(
            f"{principal.describe()} is not the banker of round {command.round_id!r}", round=command.round_id
        )
    if principal.is_player and command.banker is not None and command.banker == state.banker_player:
        _returns(attempt, state.table_id, command.banker)  # (the platform playing for it is no return)
    return command.banker


def _returns(attempt: Attempt, table_id: str, banker: str) -> None:
    """A player-banker's own call (its own token) is its reconnect signal: within its window it keeps the role."""
    table = attempt.table(table_id)
    if table.state.banker == banker and table.state.banker_leaving and attempt.app.returned_in_time(table):
        table.record(
            tc.decide_and_fold_table(table.state, tcmd.ReconnectBanker(banker, True)), attempt.command_id(table)
        )


@handler(BankerReveal)
def banker_reveal(attempt: Attempt, command: BankerReveal) -> Outcome:
    seats = tuple(command.seats)
    return _play(attempt, command, lambda a, s: rc.BankerReveal(seats, _as_banker(a, command, s), sent_by(a, command)))


@handler(BankerDraw)
def banker_draw(attempt: Attempt, command: BankerDraw) -> Outcome:
    return _play(attempt, command, lambda a, s: rc.BankerDraw(_as_banker(a, command, s), sent_by(a, command)))


@handler(BankerStay)
def banker_stay(attempt: Attempt, command: BankerStay) -> Outcome:
    return _play(attempt, command, lambda a, s: rc.BankerStay(_as_banker(a, command, s), sent_by(a, command)))


@handler(TimeOutTurn)
def time_out_turn(attempt: Attempt, command: TimeOutTurn) -> Outcome:
    """The automatic action for whoever is to act. With ``expected_version`` (the turn clock), only
    if the round has not moved since: a turn that has just begun is never timed out at once."""
    return _play(attempt, command, lambda a, _s: rc.TimeOutTurn(a.principal.actor), command.expected_version)


@handler(VoidRound)
def void_round(attempt: Attempt, command: VoidRound) -> Outcome:
    """Void a round and release its reservations. A void never needs the vault key: when the seed
    cannot be unsealed (a lost key) the round closes without revealing it (docs/operations.md)."""
    try:
        attempt.round(command.round_id)
    except VaultError as error:
        log.warning("round %s is voided without revealing its seed: %s", command.round_id, error)
        attempt.round(command.round_id, sealed=True)
    return _play(attempt, command, lambda a, _s: rc.VoidRound(command.reason, a.principal.actor))
