"""When ``legal_commands`` lists each round command, and for whom: one predicate of the state and the
asking seat per step of the machine's table (``machine._STEPS``); the seat is a holder's (0: the banker)
or None (the operator).
"""

from __future__ import annotations

from .round_cards import hand_total
from .round_state import BANKER, Phase, RoundState


def _player_seat(state: RoundState, seat: int | None) -> bool:
    """``seat`` is a player's seat (or an ante position) of this round: not the banker's, not the operator."""
    return seat is not None and seat != BANKER and any(number == seat for number, _ in state.seats)


def _staked(state: RoundState, seat: int | None) -> bool:
    """The holder of player seat ``seat`` has its stake on it (an ante position has no holder: never)."""
    holder = state.holder(seat) if seat is not None else None
    return holder is not None and any(b.seat == seat and b.player == holder for b in state.bets)


def banker_chooses(state: RoundState, seat: int | None) -> bool:
    """The banker's hand has a choice to make now, and ``seat`` plays it: the banker (0), or the operator
    (None) for the house."""
    if seat != BANKER and not (seat is None and state.banker_player is None):
        return False
    if state.phase is not Phase.BANKER_TURN or state.banker_done:
        return False
    banker_draw = state.rules.banker_draw
    assert banker_draw is not None
    return banker_draw.action(hand_total(state.banker_cards)) == "choose"


def player_chooses(state: RoundState, seat: int | None) -> bool:
    """It is player seat ``seat``'s turn and its hand has a choice to make."""
    if seat is None or state.phase is not Phase.PLAYER_TURNS or state.turn != seat or not _player_seat(state, seat):
        return False
    player_draw = state.rules.player_draw
    assert player_draw is not None
    return player_draw.action(hand_total(state.cards(seat))) == "choose"


def may_bet(state: RoundState, seat: int | None) -> bool:
    return state.phase is Phase.BETTING and _player_seat(state, seat) and not _staked(state, seat)


def may_deal(state: RoundState, seat: int | None) -> bool:
    return seat is None and state.phase is Phase.BETTING and bool(state.bets)


def may_contribute(state: RoundState, seat: int | None) -> bool:
    """In betting, in a round with contributions: the platform (the operator), the player-banker, and
    each seat's holder once its stake is in (before, it contributes with its stake)."""
    if state.phase is not Phase.BETTING or not state.client_seed_rule:
        return False
    if seat is None:
        return True
    if seat == BANKER:
        return state.banker_player is not None
    return _player_seat(state, seat) and _staked(state, seat)


def may_side_bet(state: RoundState, seat: int | None) -> bool:
    if state.phase is not Phase.SIDE_BETS or not _player_seat(state, seat) or not _staked(state, seat):
        return False
    return not any(b.seat == seat for b in state.side_bets)


def may_close_side_bets(state: RoundState, seat: int | None) -> bool:
    return seat is None and state.phase is Phase.SIDE_BETS


def may_time_out(state: RoundState, seat: int | None) -> bool:
    phase = state.phase
    return seat is None and (
        phase in (Phase.SIDE_BETS, Phase.PLAYER_TURNS) or (phase is Phase.BANKER_TURN and not state.banker_done)
    )


def may_reveal(state: RoundState, seat: int | None) -> bool:
    return banker_chooses(state, seat) and state.rules.banker_selective_reveal


def may_void(state: RoundState, seat: int | None) -> bool:
    return seat is None
