"""Whole rounds played by random legal decisions under random profiles, tables and seeds.

For every round: (a) the money balances; (b) the same seed and the same commands give
the same events; (c) replaying the events gives the live state; (d) every card comes
from the seeded shuffle in order, deal first then draws in turn order, and no card
repeats in a single deck; (e) no reservation leaks.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pokdeng_core import events as e
from pokdeng_core.machine import decide
from pokdeng_core.profiles import Profile, get_profile
from pokdeng_core.round_evolve import evolve, replay
from pokdeng_core.round_state import BANKER, RoundState, attach_shoe
from pokdeng_core.shuffle import NONCE_MAX, shuffled_deck

from .rounds import VOID_AT, Round, check_books, open_round, play_randomly, reservations

PROPERTY_SETTINGS = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class Table:
    profile: Profile
    seats: tuple[tuple[int, str | None], ...] | None
    banker: str | None
    min_stake: int
    max_stake: int
    server_seed: bytes
    client_seed: str
    nonce: int


@st.composite
def tables(draw: st.DrawFn) -> Table:
    name = draw(st.sampled_from(["classic", "ante", "room", "kingmaker"]))
    options: dict[str, bool] = {}
    if name == "classic":
        straights = draw(st.booleans())
        options = {"straights": straights, "ace_low": straights and draw(st.booleans())}
    profile = get_profile(name, **options)
    seats: tuple[tuple[int, str | None], ...] | None = None
    banker = None
    if profile.fixed_positions is None:
        count = draw(st.integers(1, min(profile.max_hands, 8)))
        numbers = sorted(draw(st.sets(st.integers(1, 20), min_size=count, max_size=count)))
        if profile.seats_per_player > 1:  # classic: a player may hold several seats
            holders = [draw(st.sampled_from(["ann", "bob", "cat", "dan", "eve"])) for _ in numbers]
        else:
            holders = [f"p{n}" for n in numbers]
        seats = tuple(zip(numbers, holders, strict=True))
        if name == "room" or (name == "classic" and draw(st.booleans())):
            banker = "bank"
    min_stake = draw(st.integers(1, 500))
    max_stake = draw(st.integers(min_stake + 1, 100_000))
    if profile.wager_split:  # ante's limits are even (a wager is half ante, half bet)
        min_stake, max_stake = 2 * min_stake, 2 * max_stake
    return Table(
        profile,
        seats,
        banker,
        min_stake,
        max_stake,
        draw(st.binary(min_size=16, max_size=64)),
        draw(st.text(max_size=40)),
        draw(st.integers(0, NONCE_MAX)),
    )


def play(table: Table, rnd: random.Random, void_at: int | None = None) -> Round:
    played = open_round(
        table.profile,
        table.seats,
        table.banker,
        server_seed=table.server_seed,
        client_seed=table.client_seed,
        nonce=table.nonce,
        min_stake=table.min_stake,
        max_stake=table.max_stake,
    )
    return play_randomly(played, rnd, void_at=void_at)


def rerun(table: Table, played: Round) -> list[e.RoundEvent]:
    """The same commands again from scratch, the shoe attached from the same seed."""
    state = RoundState()
    produced: list[e.RoundEvent] = []
    for i, command in enumerate(played.commands):
        events = decide(state, command)
        for event in events:
            state = evolve(state, event)
        produced.extend(events)
        if i == 0:
            state = attach_shoe(state, table.server_seed)
    return produced


@PROPERTY_SETTINGS
@given(table=tables(), choices=st.integers(0, 2**64), void_at=VOID_AT)
def test_whole_rounds(table: Table, choices: int, void_at: int | None) -> None:
    played = play(table, random.Random(choices), void_at)
    events = played.events
    state = played.state
    assert state.is_closed
    assert isinstance(events[-1], e.RoundClosed)

    # (a) money: balanced, nets from stakes, no loss beyond the reservation
    check_books(played)

    # (b) the same seed and the same commands give exactly the same events
    assert rerun(table, played) == events

    # (c) replaying the events gives the live state, after every command
    assert replay(events) == state
    boundary = 0
    for after, produced in zip(played.states, played.produced, strict=True):
        boundary += len(produced)
        assert replay(events[:boundary]) == after

    # (d) every card from the seeded shuffle, in order
    shoe = shuffled_deck(table.server_seed, table.client_seed, table.nonce, table.profile.decks)
    dealt: list[str] = []
    seats_drawing: list[int] = []
    for event in events:
        if isinstance(event, e.CardsDealt):
            in_play = state.in_play
            assert [seat for seat, _ in event.cards] == [*in_play, BANKER] * 2
            dealt.extend(card for _, card in event.cards)
        elif isinstance(event, e.CardDrawn):
            seats_drawing.append(event.seat)
            dealt.append(event.card)
    assert dealt == [str(card) for card in shoe[: len(dealt)]]
    if table.profile.decks == 1:
        assert len(set(dealt)) == len(dealt)
    order = [s if s != BANKER else 10**6 for s in seats_drawing]
    assert order == sorted(order) and len(set(order)) == len(order), "draws go in turn order, once each"
    for seat, cards in state.hands:
        assert len(cards) == 2 + (seat in seats_drawing)

    # (e) no reservation leak
    held, banker_held = reservations(events)
    closing = [ev for ev in events if isinstance(ev, e.RoundSettled | e.RoundVoided)]
    assert len(closing) == 1
    released: Counter[str] = Counter()
    if isinstance(closing[0], e.RoundSettled):
        for player, amount, _net in closing[0].wallets:
            released[player] += amount
    else:
        for player, amount in closing[0].wallets:
            released[player] += amount
    expected = Counter(held)
    if table.banker is not None:
        expected[table.banker] += banker_held
    assert +released == +expected
    assert dict(state.reserved) == dict(held)


@PROPERTY_SETTINGS
@given(table=tables(), choices=st.integers(0, 2**64))
def test_settled_rounds_balance(table: Table, choices: int) -> None:
    """(a) again, without voids: every round of every profile settles and balances."""
    played = play(table, random.Random(choices))
    settled = played.settled
    assert sum(net for _, _, net in settled.wallets) + settled.house_net + settled.commission == 0
    check_books(played)
