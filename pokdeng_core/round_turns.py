"""The turns: a side bet and the side bets' close, a player's draw or stay, the banker's selective reveal,
draw or stay, and a turn timed out (its automatic action), each followed by the automatic play.
"""

from __future__ import annotations

from . import commands as c
from . import events as e
from .errors import DomainError, InvalidCommand, NotYourTurn, UnknownSeat, WrongPhase
from .evaluation import evaluate
from .round_cards import hand_total
from .round_dealing import advance, banker_pok
from .round_deciding import RoundRun, check_funds, require_phase
from .round_ending import reveal_and_settle, showdown
from .round_state import BANKER, Phase, RoundState
from .settlement import settle_side_bet


def place_side_bet(run: RoundRun, cmd: c.PlaceSideBet) -> None:
    state = run.state
    require_phase(state, Phase.SIDE_BETS, doing="place a side bet")
    rule = state.rules.side_bet
    assert rule is not None
    if state.holder(cmd.seat) != cmd.player:
        raise NotYourTurn(f"seat {cmd.seat} belongs to another player", seat=cmd.seat)
    main = [b for b in state.bets if b.seat == cmd.seat and b.player == cmd.player]
    if not main:
        raise DomainError(f"seat {cmd.seat} has no main stake to match", seat=cmd.seat)
    if any(b.seat == cmd.seat for b in state.side_bets):
        raise DomainError(f"seat {cmd.seat} already has a side bet", seat=cmd.seat)
    stake = main[0].stake
    check_funds(stake, cmd.available, cmd.player, "the player's")
    run.emit(e.SideBetPlaced(cmd.seat, cmd.player, stake, stake, cmd.by))


def close_side_bets(run: RoundRun, cmd: c.CloseSideBets | c.TimeOutTurn) -> None:
    state = run.state
    require_phase(state, Phase.SIDE_BETS, doing="close the side bets")
    profile = state.rules
    natural = evaluate(profile, state.banker_cards).is_pok
    results = tuple(
        (b.seat, b.player, b.stake, settle_side_bet(profile, natural, b.stake).net) for b in state.side_bets
    )
    run.emit(e.SideBetsSettled(natural, results, cmd.by))
    if banker_pok(run):
        return
    advance(run)


def _player_action(run: RoundRun, seat: int, player: str, draw: bool, by: str) -> None:
    state = run.state
    require_phase(state, Phase.PLAYER_TURNS, doing="draw" if draw else "stay")
    holder = state.holder(seat)
    if holder != player:
        raise NotYourTurn(f"seat {seat} belongs to another player", seat=seat)
    if state.turn != seat:
        raise NotYourTurn(f"it is seat {state.turn}'s turn, not seat {seat}'s", seat=seat, turn=state.turn)
    player_draw = state.rules.player_draw
    assert player_draw is not None
    if player_draw.action(hand_total(state.cards(seat))) != "choose":
        raise DomainError(f"seat {seat} has no choice to make")
    if draw:
        run.emit(e.CardDrawn(seat, run.next_text(), "choice", by))
    else:
        run.emit(e.PlayerStood(seat, "choice", by))
    advance(run)


def draw(run: RoundRun, cmd: c.Draw) -> None:
    _player_action(run, cmd.seat, cmd.player, True, cmd.by)


def stay(run: RoundRun, cmd: c.Stay) -> None:
    _player_action(run, cmd.seat, cmd.player, False, cmd.by)


def _banker_may_choose(state: RoundState, player: str | None, doing: str) -> None:
    require_phase(state, Phase.BANKER_TURN, doing=doing)
    if state.banker_done:
        raise WrongPhase("the banker has already played")
    if player != state.banker_player:
        raise NotYourTurn("only the banker may play the banker's hand")
    banker_draw = state.rules.banker_draw
    assert banker_draw is not None
    if banker_draw.action(hand_total(state.banker_cards)) != "choose":
        raise DomainError("the banker has no choice to make")


def banker_reveal(run: RoundRun, cmd: c.BankerReveal) -> None:
    state = run.state
    _banker_may_choose(state, cmd.player, "reveal hands")
    if not state.rules.banker_selective_reveal:
        raise DomainError(f"in {state.rules.name} the banker cannot reveal chosen hands")
    seats = tuple(cmd.seats)
    if not seats or len(set(seats)) != len(seats):
        raise InvalidCommand("name one or more distinct seats to reveal", field="seats")
    for seat in seats:
        if seat not in state.in_play:
            raise UnknownSeat(f"seat {seat} has no hand in this round", seat=seat)
        if seat in state.revealed:
            raise DomainError(f"seat {seat} is already settled", seat=seat)
    reveal_and_settle(run, tuple(sorted(seats)), selective=True, by=cmd.by)
    if all(s in run.state.revealed for s in run.state.in_play):
        showdown(run)


def banker_play(run: RoundRun, cmd: c.BankerDraw | c.BankerStay) -> None:
    draw = isinstance(cmd, c.BankerDraw)
    _banker_may_choose(run.state, cmd.player, "draw" if draw else "stay")
    if draw:
        run.emit(e.CardDrawn(BANKER, run.next_text(), "choice", cmd.by))
    else:
        run.emit(e.PlayerStood(BANKER, "choice", cmd.by))
    showdown(run)


def time_out_turn(run: RoundRun, cmd: c.TimeOutTurn) -> None:
    state = run.state
    if state.phase is Phase.SIDE_BETS:
        close_side_bets(run, cmd)
        return
    require_phase(state, Phase.PLAYER_TURNS, Phase.BANKER_TURN, doing="time out a turn")
    if state.phase is Phase.BANKER_TURN and state.banker_done:
        raise WrongPhase("the banker has already played")
    profile = state.rules
    seat = state.turn if state.phase is Phase.PLAYER_TURNS else BANKER
    rule = profile.player_draw if seat else profile.banker_draw
    assert seat is not None and rule is not None
    draws = rule.timeout_draws(hand_total(state.cards(seat)))
    run.emit(e.TurnTimedOut(seat, "draw" if draws else "stay", cmd.by))
    if draws:
        run.emit(e.CardDrawn(seat, run.next_text(), "timeout"))
    else:
        run.emit(e.PlayerStood(seat, "timeout"))
    if seat == BANKER:
        showdown(run)
    else:
        advance(run)
