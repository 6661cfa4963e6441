"""The round's state: its phase, bets, hands and money as its events say, and its private shoe.

``RoundState`` is what ``machine.decide`` decides on and ``round_evolve.evolve`` folds into. Cards come
from the round's shoe, which is not part of the public record until the round closes: the shell attaches
it with ``attach_shoe`` (from the server seed, checked against the commitment) before it asks for anything
that deals. In a round with contributions (``contributions_opened``) the client seed is only known at the
deal: until then the shoe holds the server seed alone, and the deal derives the client seed
(``ClientSeedFixed``) and shuffles the shoe from it before the first card.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from .cards import Card, parse_card
from .errors import DomainError, UnknownSeat, WrongPhase
from .profiles import Profile
from .shuffle import SHUFFLE_ALGORITHM, shuffled_deck

BANKER = 0


class Phase(StrEnum):
    NEW = "new"
    BETTING = "betting"
    SIDE_BETS = "side_bets"
    PLAYER_TURNS = "player_turns"
    BANKER_TURN = "banker_turn"
    SHOWDOWN = "showdown"
    SETTLED = "settled"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class Bet:
    seat: int
    player: str
    stake: int
    reserved: int


@dataclass(frozen=True, slots=True)
class Shoe:
    """The round's private shoe: the server seed and the shuffled cards it gives.

    ``client_seed`` is the client seed the cards were shuffled with. None: no cards yet (a round with
    contributions before its deal: the client seed is not fixed), or a stacked shoe (tests)."""

    server_seed: bytes
    cards: tuple[Card, ...]
    client_seed: str | None = None


@dataclass(frozen=True)
class RoundState:
    """Everything the round's events say, plus the private shoe (never in an event before the reveal).

    Not slotted on purpose: ``evolve`` copies the instance dictionary in one step, several
    times faster than ``dataclasses.replace`` on a slotted class (bench/bench_rounds.py).
    """

    phase: Phase = Phase.NEW
    round_id: str = ""
    table_id: str = ""
    round_no: int = 0
    profile: Profile | None = None
    banker_player: str | None = None
    seats: tuple[tuple[int, str | None], ...] = ()
    min_stake: int = 0
    max_stake: int = 0
    currency: str = "THB"
    commitment: str = ""
    client_seed: str = ""  # the shuffle's client seed once fixed ("" before, in a round with contributions)
    nonce: int = 0
    algorithm: str = ""
    client_seed_rule: str = ""  # "": the client seed was given at the opening (engines before 1.1.0)
    contributions: tuple[tuple[str, str], ...] = ()  # (contributor, client seed), sorted; "" the platform
    contributions_sent: tuple[tuple[str, int], ...] = ()  # (contributor, contributions it sent), sorted: the
    # service refuses more than ``limits.MAX_CONTRIBUTIONS`` (an abuse limit, not a rule: older rounds replay)
    seed_fixed: bool = False  # the client seed is known (at the opening without contributions, else the deal)
    bets: tuple[Bet, ...] = ()
    side_bets: tuple[Bet, ...] = ()
    banker_reserved: int = 0
    reserved: tuple[tuple[str, int], ...] = ()  # per wallet, in order of first reservation
    in_play: tuple[int, ...] = ()
    hands: tuple[tuple[int, tuple[Card, ...]], ...] = ()  # seat -> cards, banker (0) included
    up_card: Card | None = None
    cards_used: int = 0
    done: frozenset[int] = frozenset()  # player seats that have finished acting (pok, stood, drew)
    banker_done: bool = False
    revealed: frozenset[int] = frozenset()
    nets: tuple[tuple[str, int], ...] = ()
    banker_sum: int = 0
    player_commission: int = 0
    outcome: str = ""
    server_seed: str = ""
    shoe: Shoe | None = field(default=None, compare=False, repr=False)

    # -- derived views -------------------------------------------------------------------

    @property
    def rules(self) -> Profile:
        if self.profile is None:
            raise WrongPhase("the round is not open")
        return self.profile

    def holder(self, seat: int) -> str | None:
        for number, holder in self.seats:
            if number == seat:
                return holder
        raise UnknownSeat(f"seat {seat} is not at this table", seat=seat)

    def cards(self, seat: int) -> tuple[Card, ...]:
        for number, cards in self.hands:
            if number == seat:
                return cards
        return ()

    @property
    def banker_cards(self) -> tuple[Card, ...]:
        return self.cards(BANKER)

    @property
    def turn(self) -> int | None:
        """The player seat to act, or None (no player's turn now)."""
        if self.phase is not Phase.PLAYER_TURNS:
            return None
        for seat in self.in_play:
            if seat not in self.done:
                return seat
        return None

    def bets_on(self, seat: int) -> tuple[Bet, ...]:
        return tuple(b for b in self.bets if b.seat == seat)

    @property
    def is_closed(self) -> bool:
        return self.phase is Phase.CLOSED


def attach_shoe(state: RoundState, server_seed: bytes) -> RoundState:
    """Give the round its shoe from the server seed, after checking the seed against the commitment.

    Once the client seed is fixed the shoe holds the shuffled cards; before (a round with
    contributions, before its deal) it holds the server seed alone and the deal shuffles it."""
    if not state.commitment:
        raise WrongPhase("the round has no committed shuffle yet")
    if hashlib.sha256(server_seed).hexdigest() != state.commitment:
        raise DomainError("the server seed does not match the round's commitment")
    if state.algorithm != SHUFFLE_ALGORITHM:
        raise DomainError(f"shuffle algorithm {state.algorithm!r} is not supported by this engine")
    if not state.seed_fixed:
        return with_changes(state, {"shoe": Shoe(server_seed, ())})
    cards = shuffled_deck(server_seed, state.client_seed, state.nonce, state.rules.decks)
    return with_changes(state, {"shoe": Shoe(server_seed, cards, state.client_seed)})


def shoe_client_seed(state: RoundState) -> str | None:
    """The client seed the round's shoe must be shuffled with now (``Shoe.client_seed``): None while it
    is not fixed. A cached shoe whose ``client_seed`` differs is stale and must be attached afresh."""
    return state.client_seed if state.seed_fixed else None


def attach_stacked_shoe(state: RoundState, cards: Iterable[Card | str]) -> RoundState:
    """Give the round a chosen card order (tests and worked examples only: no seed, nothing to verify)."""
    order = tuple(x if isinstance(x, Card) else parse_card(x) for x in cards)
    return replace(state, shoe=Shoe(b"", order))


_new_object = object.__new__


_set_attribute = object.__setattr__


def with_changes(state: RoundState, changes: dict[str, Any]) -> RoundState:
    """``dataclasses.replace(state, **changes)`` at a fraction of the cost (the hot path of ``evolve``).

    A copy of the instance dictionary with ``changes`` applied: the same fields and values that
    ``replace`` gives (``RoundState`` has no ``__post_init__`` and every field is an init field).
    """
    fresh = _new_object(RoundState)
    values = state.__dict__.copy()
    values.update(changes)
    _set_attribute(fresh, "__dict__", values)
    return fresh
