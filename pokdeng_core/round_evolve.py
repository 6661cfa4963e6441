"""The round's ``evolve(state, event) -> state``: each event's fold into the state, and ``replay``.

``evolve`` folds one event into the round's state and never refuses: the event was decided on, so it
only records what changed (``_EVOLVERS``, one fold per event type). ``replay`` folds a stream of events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from . import events as e
from .cards import Card
from .profiles import get_profile
from .round_cards import event_card
from .round_state import BANKER, Bet, Phase, RoundState, Shoe, with_changes
from .shuffle import shuffled_deck


def _add(pairs: tuple[tuple[str, int], ...], key: str, amount: int) -> tuple[tuple[str, int], ...]:
    for i, (k, v) in enumerate(pairs):
        if k == key:
            return (*pairs[:i], (k, v + amount), *pairs[i + 1 :])
    return (*pairs, (key, amount))


def _set_hand(
    hands: tuple[tuple[int, tuple[Card, ...]], ...], seat: int, card: Card
) -> tuple[tuple[int, tuple[Card, ...]], ...]:
    for i, (number, cards) in enumerate(hands):
        if number == seat:
            return (*hands[:i], (number, (*cards, card)), *hands[i + 1 :])
    return (*hands, (seat, (card,)))


def _player_done(state: RoundState, seat: int, changes: dict[str, Any]) -> RoundState:
    """``seat`` has finished acting; the banker's turn comes when every player seat has."""
    done = state.done | {seat}
    changes["done"] = done
    if state.phase is Phase.PLAYER_TURNS:
        for s in state.in_play:
            if s not in done:
                break
        else:
            changes["phase"] = Phase.BANKER_TURN
    return with_changes(state, changes)


def _on_round_opened(state: RoundState, event: e.RoundOpened) -> RoundState:
    profile = get_profile(event.profile_name, event.profile_version, **dict(event.profile_options))
    return with_changes(
        state,
        {
            "phase": Phase.NEW,
            "round_id": event.round_id,
            "table_id": event.table_id,
            "round_no": event.round_no,
            "profile": profile,
            "banker_player": event.banker_player,
            "seats": event.seats,
            "min_stake": event.min_stake,
            "max_stake": event.max_stake,
            "currency": event.currency,
        },
    )


def _on_contributions_opened(state: RoundState, event: e.ContributionsOpened) -> RoundState:
    return with_changes(state, {"client_seed_rule": event.rule})


def _on_shuffle_committed(state: RoundState, event: e.ShuffleCommitted) -> RoundState:
    return with_changes(
        state,
        {
            "phase": Phase.BETTING,
            "commitment": event.commitment,
            "client_seed": event.client_seed,
            "nonce": event.nonce,
            "algorithm": event.algorithm,
            "seed_fixed": not state.client_seed_rule,
        },
    )


def _on_client_seed_contributed(state: RoundState, event: e.ClientSeedContributed) -> RoundState:
    contributor = event.contributor
    kept = tuple(pair for pair in state.contributions if pair[0] != contributor)
    contributions = tuple(sorted((*kept, (contributor, event.client_seed)), key=_contributor_order))
    sent = dict(state.contributions_sent)
    sent[contributor] = sent.get(contributor, 0) + 1
    return with_changes(state, {"contributions": contributions, "contributions_sent": tuple(sorted(sent.items()))})


def _contributor_order(pair: tuple[str, str]) -> bytes:
    return pair[0].encode("utf-8", "surrogatepass")


def _on_client_seed_fixed(state: RoundState, event: e.ClientSeedFixed) -> RoundState:
    changes: dict[str, Any] = {
        "client_seed": event.client_seed,
        "contributions": event.contributions,
        "seed_fixed": True,
    }
    shoe = state.shoe  # a seeded shoe (not a stacked one) is shuffled now, from the fixed client seed
    if shoe is not None and shoe.server_seed and shoe.client_seed != event.client_seed:
        cards = shuffled_deck(shoe.server_seed, event.client_seed, state.nonce, state.rules.decks)
        changes["shoe"] = Shoe(shoe.server_seed, cards, event.client_seed)
    return with_changes(state, changes)


def _on_bet_placed(state: RoundState, event: e.BetPlaced) -> RoundState:
    return with_changes(
        state,
        {
            "bets": (*state.bets, Bet(event.seat, event.player, event.stake, event.reserved)),
            "reserved": _add(state.reserved, event.player, event.reserved),
            "banker_reserved": state.banker_reserved + event.banker_reserved,
        },
    )


def _on_cards_dealt(state: RoundState, event: e.CardsDealt) -> RoundState:
    by_seat: dict[int, list[Card]] = {}
    for seat, text in event.cards:
        held = by_seat.get(seat)
        if held is None:
            by_seat[seat] = [event_card(text)]
        else:
            held.append(event_card(text))
    return with_changes(
        state,
        {
            "phase": Phase.PLAYER_TURNS if state.rules.player_draw is not None else Phase.SHOWDOWN,
            "hands": tuple((seat, tuple(held)) for seat, held in by_seat.items()),
            "in_play": tuple(seat for seat in by_seat if seat != BANKER),
            "cards_used": state.cards_used + len(event.cards),
            "up_card": event_card(event.banker_up_card) if event.banker_up_card else None,
        },
    )


def _on_pok_declared(state: RoundState, event: e.PokDeclared) -> RoundState:
    if event.seat == BANKER:
        return with_changes(state, {"banker_done": True, "phase": Phase.SHOWDOWN})
    return _player_done(state, event.seat, {})


def _on_side_bet_window_opened(state: RoundState, event: e.SideBetWindowOpened) -> RoundState:
    return with_changes(state, {"phase": Phase.SIDE_BETS})


def _on_side_bet_placed(state: RoundState, event: e.SideBetPlaced) -> RoundState:
    return with_changes(
        state,
        {
            "side_bets": (*state.side_bets, Bet(event.seat, event.player, event.stake, event.reserved)),
            "reserved": _add(state.reserved, event.player, event.reserved),
        },
    )


def _on_side_bets_settled(state: RoundState, event: e.SideBetsSettled) -> RoundState:
    nets = state.nets
    banker_sum = state.banker_sum
    for _seat, player, _stake, net in event.results:
        nets = _add(nets, player, net)
        banker_sum -= net
    done = state.done
    every_seat_done = all(s in done for s in state.in_play)
    phase = Phase.BANKER_TURN if every_seat_done else Phase.PLAYER_TURNS
    return with_changes(state, {"nets": nets, "banker_sum": banker_sum, "phase": phase})


def _on_turn_timed_out(state: RoundState, event: e.TurnTimedOut) -> RoundState:
    return state


def _on_card_drawn(state: RoundState, event: e.CardDrawn) -> RoundState:
    changes: dict[str, Any] = {
        "hands": _set_hand(state.hands, event.seat, event_card(event.card)),
        "cards_used": state.cards_used + 1,
    }
    if event.seat == BANKER:
        changes["banker_done"] = True
        return with_changes(state, changes)
    return _player_done(state, event.seat, changes)


def _on_player_stood(state: RoundState, event: e.PlayerStood) -> RoundState:
    if event.seat == BANKER:
        return with_changes(state, {"banker_done": True})
    return _player_done(state, event.seat, {})


def _on_hands_revealed(state: RoundState, event: e.HandsRevealed) -> RoundState:
    phase = state.phase if event.selective else Phase.SHOWDOWN
    return with_changes(state, {"revealed": state.revealed | set(event.seats), "phase": phase})


def _on_bet_settled(state: RoundState, event: e.BetSettled) -> RoundState:
    return with_changes(
        state,
        {
            "nets": _add(state.nets, event.player, event.net),
            "banker_sum": state.banker_sum - event.net - event.commission,
            "player_commission": state.player_commission + event.commission,
        },
    )


def _on_round_settled(state: RoundState, event: e.RoundSettled) -> RoundState:
    return with_changes(state, {"phase": Phase.SETTLED, "outcome": "settled"})


def _on_round_voided(state: RoundState, event: e.RoundVoided) -> RoundState:
    return with_changes(state, {"phase": Phase.SETTLED, "outcome": "voided"})


def _on_seed_revealed(state: RoundState, event: e.SeedRevealed) -> RoundState:
    return with_changes(state, {"server_seed": event.server_seed})


def _on_round_closed(state: RoundState, event: e.RoundClosed) -> RoundState:
    return with_changes(state, {"phase": Phase.CLOSED, "outcome": event.outcome})


_EVOLVERS: Mapping[type[e.RoundEvent], Callable[[RoundState, Any], RoundState]] = MappingProxyType(
    {
        e.RoundOpened: _on_round_opened,
        e.ContributionsOpened: _on_contributions_opened,
        e.ShuffleCommitted: _on_shuffle_committed,
        e.ClientSeedContributed: _on_client_seed_contributed,
        e.ClientSeedFixed: _on_client_seed_fixed,
        e.BetPlaced: _on_bet_placed,
        e.CardsDealt: _on_cards_dealt,
        e.PokDeclared: _on_pok_declared,
        e.SideBetWindowOpened: _on_side_bet_window_opened,
        e.SideBetPlaced: _on_side_bet_placed,
        e.SideBetsSettled: _on_side_bets_settled,
        e.TurnTimedOut: _on_turn_timed_out,
        e.CardDrawn: _on_card_drawn,
        e.PlayerStood: _on_player_stood,
        e.HandsRevealed: _on_hands_revealed,
        e.BetSettled: _on_bet_settled,
        e.RoundSettled: _on_round_settled,
        e.RoundVoided: _on_round_voided,
        e.SeedRevealed: _on_seed_revealed,
        e.RoundClosed: _on_round_closed,
    }
)


def evolve(state: RoundState, event: e.RoundEvent) -> RoundState:
    """Fold one event into the round's state."""
    try:
        fold = _EVOLVERS[type(event)]
    except KeyError:
        found = next((_EVOLVERS[k] for k in type(event).__mro__ if k in _EVOLVERS and k is not e.RoundEvent), None)
        if found is None:
            raise TypeError(f"not a round event: {event!r}") from None
        fold = found
    return fold(state, event)


def replay(events: Iterable[e.RoundEvent], state: RoundState | None = None) -> RoundState:
    """Fold a stream of events from an empty (or the given) state."""
    current = state or RoundState()
    for event in events:
        current = evolve(current, event)
    return current
