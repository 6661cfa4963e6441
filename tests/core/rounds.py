"""Build and drive rounds of the state machine in tests (pokdeng_core/machine.py).

``stack`` lays out a shoe so that every hand is exactly what a test wants: the deal
in seat order one card at a time, the banker last, then the draws in turn order, then
the rest of the deck. ``Round`` wraps a state and its event log: ``do`` decides and
folds a command, ``refuse`` checks that a command is refused and changes nothing.
``random_command`` turns a name from ``legal_commands`` into a concrete command.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest
from hypothesis import strategies as st

from pokdeng_core import commands as c
from pokdeng_core import events as e
from pokdeng_core.cards import Card, canonical_deck, parse_cards
from pokdeng_core.errors import DomainError
from pokdeng_core.machine import decide, legal_commands
from pokdeng_core.profiles import Profile, get_profile
from pokdeng_core.round_evolve import evolve
from pokdeng_core.round_state import BANKER, Phase, RoundState, attach_shoe, attach_stacked_shoe
from pokdeng_core.shuffle import SHUFFLE_ALGORITHM, commitment

SEED = bytes(range(32))
CLIENT_SEED = "client seed"
NONCE = 7
BIG = 10**12  # a wallet that covers anything
MIN_STAKE = 10
MAX_STAKE = 100_000
ANTE_POSITIONS = tuple(range(1, 6))

Ev = TypeVar("Ev", bound=e.RoundEvent)


def cards(text: str) -> tuple[Card, ...]:
    return parse_cards(text)


def texts(text: str) -> tuple[str, ...]:
    """Card text in the events' canonical notation (``"10H"``, not ``"TH"``)."""
    return tuple(str(card) for card in parse_cards(text))


def stack(hands: Mapping[int, str], banker: str, draws: str = "", decks: int = 1) -> tuple[Card, ...]:
    """A whole shoe dealing ``hands`` (seat -> two cards) and ``banker``, then ``draws`` in order.

    The deal goes in seat order one card at a time, the banker last; the draws follow;
    the rest of the shoe is the canonical order less the cards used.
    """
    seats = sorted(hands)
    held = [cards(hands[seat]) for seat in seats]
    bank = cards(banker)
    assert all(len(h) == 2 for h in held) and len(bank) == 2, "two cards per hand"
    order = [h[0] for h in held] + [bank[0]] + [h[1] for h in held] + [bank[1]]
    order += list(cards(draws)) if draws.strip() else []
    used = Counter(order)
    full = Counter(canonical_deck(decks))
    assert not used - full, f"more copies than a {decks}-deck shoe holds: {used - full}"
    rest: list[Card] = []
    for card in canonical_deck(decks):
        if used[card]:
            used[card] -= 1
        else:
            rest.append(card)
    return (*order, *rest)


def default_seats(profile: Profile, count: int = 5) -> tuple[tuple[int, str | None], ...]:
    if profile.fixed_positions is not None:
        return tuple((seat, None) for seat in range(1, profile.fixed_positions + 1))
    return tuple((seat, f"p{seat}") for seat in range(1, count + 1))


@dataclass
class Round:
    """A round under test: its state, every event so far and every command accepted."""

    state: RoundState
    events: list[e.RoundEvent] = field(default_factory=list)
    commands: list[c.RoundCommand] = field(default_factory=list)
    states: list[RoundState] = field(default_factory=list)  # the state after each accepted command
    produced: list[tuple[e.RoundEvent, ...]] = field(default_factory=list)  # each accepted command's events

    # -- driving ---------------------------------------------------------------------

    def do(self, command: c.RoundCommand) -> tuple[e.RoundEvent, ...]:
        produced = decide(self.state, command)
        for event in produced:
            self.state = evolve(self.state, event)
        self.events.extend(produced)
        self.commands.append(command)
        self.states.append(self.state)
        self.produced.append(produced)
        return produced

    def refuse(self, command: c.RoundCommand, error: type[DomainError] = DomainError) -> DomainError:
        """``command`` raises ``error`` (a DomainError) and the round does not change."""
        before = self.state
        with pytest.raises(error) as info:
            decide(self.state, command)
        assert isinstance(info.value, DomainError)
        assert info.value.message, "a refusal says why"
        assert self.state is before and self.state == before
        return info.value

    def holder(self, seat: int) -> str:
        holder = self.state.holder(seat)
        return holder if holder is not None else f"p{seat}"

    def bet(
        self,
        seat: int,
        stake: int = 100,
        player: str | None = None,
        available: int = BIG,
        banker_available: int | None = BIG,
    ) -> tuple[e.RoundEvent, ...]:
        return self.do(c.PlaceBet(seat, player or self.holder(seat), stake, available, banker_available))

    def deal(self) -> tuple[e.RoundEvent, ...]:
        return self.do(c.Deal())

    def draw(self, seat: int) -> tuple[e.RoundEvent, ...]:
        return self.do(c.Draw(seat, self.holder(seat)))

    def stay(self, seat: int) -> tuple[e.RoundEvent, ...]:
        return self.do(c.Stay(seat, self.holder(seat)))

    # -- reading ---------------------------------------------------------------------

    @property
    def kinds(self) -> list[str]:
        return [event.kind for event in self.events]

    def of(self, kind: type[Ev]) -> list[Ev]:
        return [event for event in self.events if isinstance(event, kind)]

    def one(self, kind: type[Ev]) -> Ev:
        found = self.of(kind)
        assert len(found) == 1, f"expected one {kind.__name__}, got {found}"
        return found[0]

    @property
    def settled(self) -> e.RoundSettled:
        return self.one(e.RoundSettled)

    def net(self, player: str) -> int:
        return {p: net for p, _, net in self.settled.wallets}[player]

    def dealt(self) -> list[tuple[int, str]]:
        return list(self.one(e.CardsDealt).cards)


def open_round(
    profile: str | Profile = "classic",
    seats: Iterable[tuple[int, str | None]] | None = None,
    banker: str | None = None,
    *,
    shoe: Sequence[Card | str] | None = None,
    server_seed: bytes = SEED,
    client_seed: str = CLIENT_SEED,
    nonce: int = NONCE,
    min_stake: int = MIN_STAKE,
    max_stake: int = MAX_STAKE,
    options: Mapping[str, Any] | None = None,
    client_seed_rule: str = "",
) -> Round:
    """An open round in betting. ``shoe``: a stacked shoe; otherwise the seeded shoe of ``server_seed``.

    ``banker`` defaults to ``"bank"`` for room (which needs a player banker). ``client_seed_rule``:
    ``shuffle.CLIENT_SEED_RULE`` for a round with contributions (``client_seed`` is then the platform's).
    """
    rules = get_profile(profile, **dict(options or {}))
    if banker is None and rules.name == "room":
        banker = "bank"
    seated = tuple(seats) if seats is not None else default_seats(rules)
    opened = Round(RoundState())
    opened.do(
        c.OpenRound(
            "round-1",
            "table-1",
            1,
            rules,
            seated,
            banker,
            min_stake,
            max_stake,
            commitment(server_seed),
            client_seed,
            nonce,
            SHUFFLE_ALGORITHM,
            client_seed_rule,
        )
    )
    if shoe is not None:
        opened.state = attach_stacked_shoe(opened.state, shoe)
    else:
        opened.state = attach_shoe(opened.state, server_seed)
    return opened


def dealt_round(
    profile: str | Profile,
    hands: Mapping[int, str],
    banker_cards: str,
    draws: str = "",
    *,
    stakes: Mapping[int, int] | None = None,
    bets: Sequence[tuple[int, str, int]] | None = None,
    seats: Iterable[tuple[int, str | None]] | None = None,
    banker: str | None = None,
    deal: bool = True,
    **kwargs: Any,
) -> Round:
    """A round with a stacked shoe dealing exactly ``hands`` and ``banker_cards``, bets placed, dealt.

    By default every seat in ``hands`` is held by ``p<seat>`` and bets 100 (``stakes`` overrides per seat);
    ``bets`` lists (seat, player, stake) explicitly instead.
    """
    rules = get_profile(profile, **dict(kwargs.pop("options", None) or {}))
    if seats is None:
        seats = default_seats(rules) if rules.fixed_positions else tuple((s, f"p{s}") for s in sorted(hands))
    played = open_round(rules, seats, banker, shoe=stack(hands, banker_cards, draws, rules.decks), **kwargs)
    if bets is None:
        bets = [(seat, played.holder(seat), (stakes or {}).get(seat, 100)) for seat in sorted(hands)]
        if rules.fixed_positions:
            bets = [b for b in bets if b[2]]
    for seat, player, stake in bets:
        played.bet(seat, stake, player)
    if deal:
        played.deal()
    return played


# ---------------------------------------------------------------------------------------
# random play


def _subset(rnd: random.Random, items: Sequence[int]) -> tuple[int, ...]:
    size = rnd.randint(1, len(items))
    return tuple(rnd.sample(list(items), size))


def random_stake(rnd: random.Random, state: RoundState) -> int:
    stake = rnd.randint(state.min_stake, state.max_stake)
    if state.rules.wager_split and stake % 2:
        stake = stake + 1 if stake < state.max_stake else stake - 1
    return stake


def random_command(rnd: random.Random, state: RoundState, name: str, seat: int | None) -> c.RoundCommand:
    """A concrete command for ``name`` from ``legal_commands(state, seat)``, with funds to cover it."""
    if name == c.PlaceBet.name:
        assert seat is not None
        holder = state.holder(seat)
        player = holder if holder is not None else rnd.choice(["ann", "bob", "cat", "dan"])
        if holder is None:  # an ante position: any wallet not yet on it
            taken = {b.player for b in state.bets if b.seat == seat}
            free = [p for p in ("ann", "bob", "cat", "dan", "eve", "fay") if p not in taken]
            player = rnd.choice(free) if free else f"wallet{len(taken)}"
        return c.PlaceBet(seat, player, random_stake(rnd, state), BIG, BIG if state.banker_player else None)
    if name == c.PlaceSideBet.name:
        assert seat is not None
        holder = state.holder(seat)
        assert holder is not None
        return c.PlaceSideBet(seat, holder, BIG)
    if name in (c.Draw.name, c.Stay.name):
        assert seat is not None
        holder = state.holder(seat)
        assert holder is not None
        return c.Draw(seat, holder) if name == c.Draw.name else c.Stay(seat, holder)
    if name == c.BankerReveal.name:
        unrevealed = [s for s in state.in_play if s not in state.revealed]
        return c.BankerReveal(tuple(sorted(_subset(rnd, unrevealed))), state.banker_player)
    if name == c.BankerDraw.name:
        return c.BankerDraw(state.banker_player)
    if name == c.BankerStay.name:
        return c.BankerStay(state.banker_player)
    if name == c.VoidRound.name:
        return c.VoidRound("table closed")
    if name == c.ContributeSeed.name:
        contributor = None if seat is None else state.banker_player if seat == BANKER else state.holder(seat)
        return c.ContributeSeed(contributor, f"seed {rnd.randrange(10**6)}")
    simple: dict[str, c.RoundCommand] = {
        c.Deal.name: c.Deal(),
        c.CloseSideBets.name: c.CloseSideBets(),
        c.TimeOutTurn.name: c.TimeOutTurn(),
    }
    return simple[name]


def every_legal(state: RoundState) -> list[tuple[int | None, str]]:
    """Every (actor, command name) pair ``legal_commands`` lists: seats, the banker (0) and the operator (None)."""
    listed: list[tuple[int | None, str]] = [(None, name) for name in legal_commands(state)]
    for seat, _ in state.seats:
        listed += [(seat, name) for name in legal_commands(state, seat)]
    listed += [(BANKER, name) for name in legal_commands(state, BANKER)]
    return listed


VOID_AT = st.none() | st.integers(0, 11)
"""When a random round is voided: never (about half the rounds), else at one of its first steps."""


def play_randomly(
    played: Round,
    rnd: random.Random,
    *,
    void_at: int | None = None,
    max_bets: int = 8,
    max_steps: int = 200,
) -> Round:
    """Play ``played`` to its close by random legal decisions; void it at step ``void_at`` if still open."""
    for step in range(max_steps):
        state = played.state
        if state.is_closed:
            return played
        listed = every_legal(state)
        assert listed, f"nothing is legal in {state.phase}"
        if step == void_at:
            chosen: tuple[int | None, str] = (None, c.VoidRound.name)
        else:
            choices = [x for x in listed if x[1] != c.VoidRound.name]
            if state.phase is Phase.BETTING:
                bets = [x for x in choices if x[1] == c.PlaceBet.name]
                if state.bets and (len(state.bets) >= max_bets or not bets or rnd.random() < 0.3):
                    choices = [(None, c.Deal.name)]
                else:
                    choices = bets
            chosen = rnd.choice(choices)
        seat, name = chosen
        played.do(random_command(rnd, state, name, seat))
    raise AssertionError("the round did not close")


# ---------------------------------------------------------------------------------------
# the books


def reservations(events: Iterable[e.RoundEvent]) -> tuple[Counter[str], int]:
    """What each wallet reserved (BetPlaced + SideBetPlaced) and what the player-banker reserved."""
    per_wallet: Counter[str] = Counter()
    banker = 0
    for event in events:
        if isinstance(event, e.BetPlaced):
            per_wallet[event.player] += event.reserved
            banker += event.banker_reserved
        elif isinstance(event, e.SideBetPlaced):
            per_wallet[event.player] += event.reserved
    return per_wallet, banker


def check_books(played: Round) -> None:
    """A closed round's money: balanced, every net from its stakes, every reservation released, no loss beyond it."""
    assert played.state.is_closed
    events = played.events
    reserved, banker_reserved = reservations(events)
    banker = played.state.banker_player
    voided = played.of(e.RoundVoided)
    if voided:
        assert not played.of(e.RoundSettled)
        released = dict(voided[0].wallets)
        held = dict(reserved)
        if banker is not None and banker_reserved:
            held[banker] = banker_reserved
        assert released == held
        assert len(released) == len(voided[0].wallets), "one line per wallet"
        return
    settled = played.settled
    assert sum(net for _, _, net in settled.wallets) + settled.house_net + settled.commission == 0
    nets: Counter[str] = Counter()
    player_commission = 0
    banker_before = 0
    for event in events:
        if isinstance(event, e.BetSettled):
            nets[event.player] += event.net
            player_commission += event.commission
            banker_before -= event.net + event.commission
            assert event.net == (event.gross - event.commission if event.outcome == "player_wins" else -event.gross)
        elif isinstance(event, e.SideBetsSettled):
            for _seat, player, _stake, net in event.results:
                nets[player] += net
                banker_before -= net
    assert settled.banker_net_before_commission == banker_before
    assert settled.commission == player_commission + settled.banker_commission
    wallets = {player: (held, net) for player, held, net in settled.wallets}
    assert len(wallets) == len(settled.wallets), "one line per wallet"
    expected = {player: (reserved[player], nets[player]) for player in reserved}
    if banker is not None:
        expected[banker] = (banker_reserved, banker_before - settled.banker_commission)
        assert settled.house_net == 0
    else:
        assert settled.house_net == banker_before and settled.banker_commission == 0
    assert wallets == expected
    for player, (amount, net) in wallets.items():
        assert -net <= amount, f"{player} lost {-net}, more than the {amount} it reserved"
