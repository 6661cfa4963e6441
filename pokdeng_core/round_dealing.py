"""The deal and the automatic play: the client seed fixed (in a round with contributions), two cards to
each hand, the poks declared, the side bets' window, a banker's pok, and every automatic draw or stand
until someone must choose or the round reaches its showdown.
"""

from __future__ import annotations

from . import commands as c
from . import events as e
from .errors import DomainError, SealedShoe
from .evaluation import evaluate
from .round_cards import card_text, card_texts, hand_total
from .round_deciding import RoundRun, require_phase
from .round_ending import showdown
from .round_state import BANKER, Phase
from .shuffle import CLIENT_SEED_RULE, derive_client_seed


def _fix_client_seed(run: RoundRun) -> None:
    """The deal of a round with contributions: derive and record the client seed (folding it shuffles the
    shoe from the server seed, that client seed and the nonce; a stacked shoe keeps its order)."""
    state = run.state
    if state.client_seed_rule != CLIENT_SEED_RULE:
        raise DomainError(f"client seed rule {state.client_seed_rule!r} is not supported by this engine")
    derived = derive_client_seed(state.contributions)
    run.emit(e.ClientSeedFixed(derived, state.client_seed_rule, state.contributions))  # (its fold shuffles the shoe)


def deal(run: RoundRun, cmd: c.Deal) -> None:
    state = run.state
    require_phase(state, Phase.BETTING, doing="deal")
    if not state.bets:
        raise DomainError("no stakes have been placed: nothing to deal")
    profile = state.rules
    if profile.fixed_positions is not None:
        in_play = tuple(range(1, profile.fixed_positions + 1))
    else:
        in_play = tuple(sorted({b.seat for b in state.bets}))
    if state.shoe is None:
        raise SealedShoe("the round's shoe is sealed: attach the server seed before dealing")
    if not state.seed_fixed:
        _fix_client_seed(run)
    shoe = run.state.shoe
    assert shoe is not None
    order = (*in_play, BANKER) * 2
    if len(order) > len(shoe.cards):
        raise DomainError("the shoe is too short for this deal")
    dealt = tuple((seat, card_text(shoe.cards[i])) for i, seat in enumerate(order))
    up_card = card_text(shoe.cards[len(in_play)]) if profile.side_bet is not None else None
    run.emit(e.CardsDealt(dealt, up_card, cmd.by))
    _after_deal(run)


def _after_deal(run: RoundRun) -> None:
    state = run.state
    profile = state.rules
    if profile.player_draw is None:
        showdown(run)
        return
    for seat in state.in_play:
        cards = state.cards(seat)
        value = evaluate(profile, cards)
        if value.is_pok:
            run.emit(e.PokDeclared(seat, card_texts(cards), value.taem, value.label))
    up = run.state.up_card
    if profile.side_bet is not None and up is not None and up.points in profile.side_bet.up_card_points:
        run.emit(e.SideBetWindowOpened(card_text(up)))
        return
    if banker_pok(run):
        return
    advance(run)


def banker_pok(run: RoundRun) -> bool:
    """A banker's pok ends the round: every hand is compared at once."""
    state = run.state
    cards = state.banker_cards
    value = evaluate(state.rules, cards)
    if not value.is_pok:
        return False
    run.emit(e.PokDeclared(BANKER, card_texts(cards), value.taem, value.label))
    showdown(run)
    return True


def advance(run: RoundRun) -> None:
    """Play every automatic step until someone must choose or the round is over."""
    profile = run.state.rules
    player_draw = profile.player_draw
    assert player_draw is not None
    while (seat := run.state.turn) is not None:
        action = player_draw.action(hand_total(run.state.cards(seat)))
        if action == "draw":
            run.emit(e.CardDrawn(seat, run.next_text(), "auto"))
        elif action == "stand":
            run.emit(e.PlayerStood(seat, "auto"))
        else:
            return
    if run.state.phase is not Phase.BANKER_TURN:
        return
    banker_draw = profile.banker_draw
    assert banker_draw is not None
    action = banker_draw.action(hand_total(run.state.banker_cards))
    if action == "draw":
        run.emit(e.CardDrawn(BANKER, run.next_text(), "auto"))
    elif action == "stand":
        run.emit(e.PlayerStood(BANKER, "auto"))
    else:
        return
    showdown(run)
