"""The round as a pure state machine: ``decide(state, command) -> events``, ``evolve(state, event) -> state``.

``decide`` checks a command against the rules and returns the events it causes,
including every automatic step that follows (automatic draws, the banker's
automatic play, settlement, the seed's reveal and the close), so that the shell
saves them in one transaction. A refused command raises a ``DomainError`` and
returns nothing. ``evolve`` folds one event into the state and never refuses.
``decide_and_fold`` gives both at once, a ``Decision(events, state)``: the state after the
events, as the decision folded them (so the shell records the events and keeps the state).
Nothing here keeps anything between calls: every function is a function of its arguments.

Cards come from the round's shoe, which is not part of the public record until
the round closes: the shell attaches it with ``attach_shoe`` (from the server seed,
checked against the commitment) before it asks ``decide`` for anything that deals.
In a round with contributions (``contributions_opened``) the client seed is only known
at the deal: until then the shoe holds the server seed alone, and the deal derives the
client seed (``ClientSeedFixed``) and shuffles the shoe from it before the first card.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import lru_cache
from types import MappingProxyType
from typing import Any, NamedTuple

from . import commands as c
from . import deciding
from . import events as e
from .cards import Card, canonical_deck, parse_card
from .deciding import Decision as Decision  # (re-exported: its old home)
from .deciding import Run
from .errors import (
    DomainError,
    InsufficientFunds,
    InvalidCommand,
    NotYourTurn,
    SealedShoe,
    UnknownSeat,
    WrongPhase,
)
from .evaluation import evaluate
from .hands import taem
from .limits import MAX_CLIENT_SEED as MAX_CLIENT_SEED  # (re-exported: its old home)
from .limits import check_id, client_seed_problem, id_problem
from .profiles import ENGINE_VERSION, BankerKind, Profile, get_profile
from .settlement import StakeError, banker_commission, check_stake, settle_side_bet, settle_values
from .shuffle import CLIENT_SEED_RULE, PLATFORM, SHUFFLE_ALGORITHM, derive_client_seed, shuffled_deck

_HEX = frozenset("0123456789abcdef")
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
        return _with(state, {"shoe": Shoe(server_seed, ())})
    cards = shuffled_deck(server_seed, state.client_seed, state.nonce, state.rules.decks)
    return _with(state, {"shoe": Shoe(server_seed, cards, state.client_seed)})


def shoe_client_seed(state: RoundState) -> str | None:
    """The client seed the round's shoe must be shuffled with now (``Shoe.client_seed``): None while it
    is not fixed. A cached shoe whose ``client_seed`` differs is stale and must be attached afresh."""
    return state.client_seed if state.seed_fixed else None


def attach_stacked_shoe(state: RoundState, cards: Iterable[Card | str]) -> RoundState:
    """Give the round a chosen card order (tests and worked examples only: no seed, nothing to verify)."""
    order = tuple(x if isinstance(x, Card) else parse_card(x) for x in cards)
    return replace(state, shoe=Shoe(b"", order))


# ---------------------------------------------------------------------------------------
# evolve


@lru_cache(maxsize=1024)
def _card(text: str) -> Card:
    return parse_card(text)


_CARD_TEXT: Mapping[Card, str] = MappingProxyType({card: str(card) for card in canonical_deck()})


def _text(card: Card) -> str:
    """A card in the events' notation (``str(card)``, looked up)."""
    try:
        return _CARD_TEXT[card]  # (a read-only mapping's subscript is faster than its ``get``)
    except KeyError:
        return str(card)


def _texts(cards: Iterable[Card]) -> tuple[str, ...]:
    return tuple(map(_text, cards))


_taem = lru_cache(maxsize=8192)(taem)  # the same hands are looked at several times in a round


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


_new_object = object.__new__
_set_attribute = object.__setattr__


def _with(state: RoundState, changes: dict[str, Any]) -> RoundState:
    """``dataclasses.replace(state, **changes)`` at a fraction of the cost (the hot path of ``evolve``).

    A copy of the instance dictionary with ``changes`` applied: the same fields and values that
    ``replace`` gives (``RoundState`` has no ``__post_init__`` and every field is an init field).
    """
    fresh = _new_object(RoundState)
    values = state.__dict__.copy()
    values.update(changes)
    _set_attribute(fresh, "__dict__", values)
    return fresh


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
    return _with(state, changes)


def _on_round_opened(state: RoundState, event: e.RoundOpened) -> RoundState:
    profile = get_profile(event.profile_name, event.profile_version, **dict(event.profile_options))
    return _with(
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
    return _with(state, {"client_seed_rule": event.rule})


def _on_shuffle_committed(state: RoundState, event: e.ShuffleCommitted) -> RoundState:
    return _with(
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
    return _with(state, {"contributions": contributions, "contributions_sent": tuple(sorted(sent.items()))})


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
    return _with(state, changes)


def _on_bet_placed(state: RoundState, event: e.BetPlaced) -> RoundState:
    return _with(
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
            by_seat[seat] = [_card(text)]
        else:
            held.append(_card(text))
    return _with(
        state,
        {
            "phase": Phase.PLAYER_TURNS if state.rules.player_draw is not None else Phase.SHOWDOWN,
            "hands": tuple((seat, tuple(held)) for seat, held in by_seat.items()),
            "in_play": tuple(seat for seat in by_seat if seat != BANKER),
            "cards_used": state.cards_used + len(event.cards),
            "up_card": _card(event.banker_up_card) if event.banker_up_card else None,
        },
    )


def _on_pok_declared(state: RoundState, event: e.PokDeclared) -> RoundState:
    if event.seat == BANKER:
        return _with(state, {"banker_done": True, "phase": Phase.SHOWDOWN})
    return _player_done(state, event.seat, {})


def _on_side_bet_window_opened(state: RoundState, event: e.SideBetWindowOpened) -> RoundState:
    return _with(state, {"phase": Phase.SIDE_BETS})


def _on_side_bet_placed(state: RoundState, event: e.SideBetPlaced) -> RoundState:
    return _with(
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
    return _with(state, {"nets": nets, "banker_sum": banker_sum, "phase": phase})


def _on_turn_timed_out(state: RoundState, event: e.TurnTimedOut) -> RoundState:
    return state


def _on_card_drawn(state: RoundState, event: e.CardDrawn) -> RoundState:
    changes: dict[str, Any] = {
        "hands": _set_hand(state.hands, event.seat, _card(event.card)),
        "cards_used": state.cards_used + 1,
    }
    if event.seat == BANKER:
        changes["banker_done"] = True
        return _with(state, changes)
    return _player_done(state, event.seat, changes)


def _on_player_stood(state: RoundState, event: e.PlayerStood) -> RoundState:
    if event.seat == BANKER:
        return _with(state, {"banker_done": True})
    return _player_done(state, event.seat, {})


def _on_hands_revealed(state: RoundState, event: e.HandsRevealed) -> RoundState:
    phase = state.phase if event.selective else Phase.SHOWDOWN
    return _with(state, {"revealed": state.revealed | set(event.seats), "phase": phase})


def _on_bet_settled(state: RoundState, event: e.BetSettled) -> RoundState:
    return _with(
        state,
        {
            "nets": _add(state.nets, event.player, event.net),
            "banker_sum": state.banker_sum - event.net - event.commission,
            "player_commission": state.player_commission + event.commission,
        },
    )


def _on_round_settled(state: RoundState, event: e.RoundSettled) -> RoundState:
    return _with(state, {"phase": Phase.SETTLED, "outcome": "settled"})


def _on_round_voided(state: RoundState, event: e.RoundVoided) -> RoundState:
    return _with(state, {"phase": Phase.SETTLED, "outcome": "voided"})


def _on_seed_revealed(state: RoundState, event: e.SeedRevealed) -> RoundState:
    return _with(state, {"server_seed": event.server_seed})


def _on_round_closed(state: RoundState, event: e.RoundClosed) -> RoundState:
    return _with(state, {"phase": Phase.CLOSED, "outcome": event.outcome})


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


# ---------------------------------------------------------------------------------------
# decide


class _Run(Run[RoundState, e.RoundEvent]):
    """A round's decision in the making (``deciding.Run``), and the next card of its shoe."""

    __slots__ = ()

    def next_card(self) -> Card:
        shoe = self.state.shoe
        if shoe is None:
            raise SealedShoe("the round's shoe is sealed: attach the server seed before dealing")
        if self.state.cards_used >= len(shoe.cards):
            raise DomainError("the shoe is empty")
        return shoe.cards[self.state.cards_used]

    def next_text(self) -> str:
        return _text(self.next_card())


def decide(state: RoundState, command: c.RoundCommand) -> tuple[e.RoundEvent, ...]:
    """The events ``command`` causes in ``state``; raises ``DomainError`` (and records nothing) if refused."""
    return decide_and_fold(state, command).events


def decide_and_fold(state: RoundState, command: c.RoundCommand) -> Decision[RoundState, e.RoundEvent]:
    """``decide``, and the state after folding its events: ``events, after = decide_and_fold(state, command)``.

    ``after`` is what ``replay(events, state)`` gives, computed once along the way (the shell
    records the events and keeps ``after`` instead of folding them again).
    """
    return deciding.decide_and_fold(_HANDLERS, _Run(state, evolve), command, "round")


def _require_phase(state: RoundState, *phases: Phase, doing: str) -> None:
    if state.phase not in phases:
        wanted = " or ".join(p.value for p in phases)
        raise WrongPhase(
            f"cannot {doing} now: the round is in {state.phase.value}, not {wanted}", phase=state.phase.value
        )


def _open(run: _Run, cmd: c.OpenRound) -> None:
    state = run.state
    _require_phase(state, Phase.NEW, doing="open the round")
    profile = cmd.profile
    for name, value in (("round_id", cmd.round_id), ("table_id", cmd.table_id)):
        problem = id_problem(value, name)
        if problem is not None:  # both ids name the round: the field is its id either way
            raise InvalidCommand(problem, field="round_id")
    if cmd.round_no < 1:
        raise InvalidCommand("round numbers start at 1", field="round_no")
    if not 0 < cmd.min_stake <= cmd.max_stake:
        raise InvalidCommand("stake limits must satisfy 0 < min_stake <= max_stake", field="min_stake")
    if profile.wager_split and (cmd.min_stake % 2 or cmd.max_stake % 2):  # (as the table's: table.py)
        field = "min_stake" if cmd.min_stake % 2 else "max_stake"
        raise InvalidCommand(f"ante wagers are split in two: {field} must be even", field=field)
    numbers = [seat for seat, _ in cmd.seats]
    if len(set(numbers)) != len(numbers) or any(n < 1 for n in numbers):
        raise InvalidCommand("seat numbers must be distinct and start at 1", field="seats")
    if profile.fixed_positions is not None:
        if sorted(numbers) != list(range(1, profile.fixed_positions + 1)) or any(h for _, h in cmd.seats):
            raise InvalidCommand(f"{profile.name} has betting positions 1 to {profile.fixed_positions}", field="seats")
    else:
        if not cmd.seats:
            raise InvalidCommand("a round needs at least one seated player", field="seats")
        if len(numbers) > profile.max_hands:
            raise InvalidCommand(f"{profile.name} allows at most {profile.max_hands} hands", field="seats")
        if any(not h for _, h in cmd.seats):
            raise InvalidCommand("every seat needs a holder", field="seats")
        for seat, h in cmd.seats:
            problem = id_problem(h, "a seat holder's player id")
            if problem is not None:
                raise InvalidCommand(f"seat {seat}: {problem}", field="seats")
        held: dict[str | None, int] = {}
        for _, h in cmd.seats:
            held[h] = held.get(h, 0) + 1
        if max(held.values()) > profile.seats_per_player:
            raise InvalidCommand(
                f"in {profile.name} a player holds at most {profile.seats_per_player} seat(s)", field="seats"
            )
    if cmd.banker_player is None and BankerKind.HOUSE not in profile.banker:
        raise InvalidCommand(f"{profile.name} needs a player as banker", field="banker_player")
    if cmd.banker_player is not None:
        check_id(cmd.banker_player, "banker_player")
        if BankerKind.PLAYER not in profile.banker:
            raise InvalidCommand(f"in {profile.name} the house is the banker", field="banker_player")
        if any(h == cmd.banker_player for _, h in cmd.seats):
            raise InvalidCommand("the banker cannot also hold a player's seat", field="banker_player")
    if len(cmd.commitment) != 64 or not _HEX.issuperset(cmd.commitment):
        raise InvalidCommand("the commitment must be a SHA-256 in lowercase hex", field="commitment")
    if len(cmd.client_seed) > MAX_CLIENT_SEED:
        raise InvalidCommand(f"a client seed has at most {MAX_CLIENT_SEED} characters", field="client_seed")
    if cmd.client_seed_rule not in ("", CLIENT_SEED_RULE):
        raise InvalidCommand(f"unsupported client seed rule {cmd.client_seed_rule!r}", field="client_seed_rule")
    if cmd.client_seed_rule:
        problem = client_seed_problem(cmd.client_seed, required=False)
        if problem is not None:
            raise InvalidCommand(problem, field="client_seed")
    if not 0 <= cmd.nonce < 2**64:
        raise InvalidCommand("the nonce must be a 64-bit unsigned integer", field="nonce")
    if cmd.algorithm != SHUFFLE_ALGORITHM:
        raise InvalidCommand(f"unsupported shuffle algorithm {cmd.algorithm!r}", field="algorithm")
    run.emit(
        e.RoundOpened(
            cmd.round_id,
            cmd.table_id,
            cmd.round_no,
            profile.name,
            profile.version,
            tuple(sorted(profile.options.items())),
            ENGINE_VERSION,
            cmd.banker_player,
            tuple(sorted(cmd.seats)),
            cmd.min_stake,
            cmd.max_stake,
            cmd.currency,
            cmd.by,
        )
    )
    if not cmd.client_seed_rule:  # the client seed is given now (engines before 1.1.0)
        run.emit(e.ShuffleCommitted(cmd.commitment, cmd.client_seed, cmd.nonce, cmd.algorithm, profile.shoe_size))
        return
    run.emit(e.ContributionsOpened(cmd.client_seed_rule))
    run.emit(e.ShuffleCommitted(cmd.commitment, "", cmd.nonce, cmd.algorithm, profile.shoe_size))
    if cmd.client_seed:  # the platform's contribution, after the commitment
        run.emit(e.ClientSeedContributed(PLATFORM, cmd.client_seed))


def _stake(state: RoundState, stake: int, what: str = "stake") -> int:
    try:
        amount = check_stake(state.rules, stake, what)
    except StakeError as error:
        raise InvalidCommand(str(error), field=what) from None
    if not state.min_stake <= amount <= state.max_stake:
        raise InvalidCommand(
            f"{what} {amount} is outside the table's limits {state.min_stake}..{state.max_stake}", field=what
        )
    return amount


def _check_funds(required: int, available: int | None, wallet: str, whose: str) -> None:
    if available is None:
        raise InvalidCommand(f"{whose} available funds are needed to reserve {required}", field="available")
    if available < required:
        raise InsufficientFunds(
            f"{whose} wallet {wallet!r} cannot cover {required}: {available} available",
            required=required,
            available=available,
            wallet=wallet,
        )


def _place_bet(run: _Run, cmd: c.PlaceBet) -> None:
    state = run.state
    _require_phase(state, Phase.BETTING, doing="place a bet")
    profile = state.rules
    holder = state.holder(cmd.seat)
    if holder is None or cmd.player != holder:  # a seat's holder was checked when the round opened
        check_id(cmd.player, "player")
    if cmd.player == state.banker_player:
        raise DomainError("the banker cannot bet against itself")
    if holder is not None and holder != cmd.player and profile.name != "classic":
        raise NotYourTurn(f"seat {cmd.seat} belongs to another player", seat=cmd.seat)
    if any(b.seat == cmd.seat and b.player == cmd.player for b in state.bets):
        raise DomainError(f"{cmd.player!r} already has a stake on seat {cmd.seat}", seat=cmd.seat)
    stake = _stake(state, cmd.stake)
    reserve = stake * profile.reserve_multiple
    _check_funds(reserve, cmd.available, cmd.player, "the player's")
    banker_reserve = 0
    if state.banker_player is not None:
        banker_reserve = stake * profile.reserve_multiple
        _check_funds(banker_reserve, cmd.banker_available, state.banker_player, "the banker's")
    if cmd.client_seed is not None:
        _check_contribution(state, cmd.client_seed)
    run.emit(e.BetPlaced(cmd.seat, cmd.player, stake, reserve, banker_reserve, cmd.by))
    if cmd.client_seed is not None:  # (its sender is the bet's: bet_placed.by)
        run.emit(e.ClientSeedContributed(cmd.player, cmd.client_seed))


def _check_contribution(state: RoundState, client_seed: str) -> None:
    """A contribution fits the round: it takes contributions, and the seed is 1 to 256 characters."""
    if not state.client_seed_rule:
        raise DomainError("this round's client seed was given at its opening: it takes no contributions")
    problem = client_seed_problem(client_seed, required=True)
    if problem is not None:
        raise InvalidCommand(problem, field="client_seed")


def _contribute(run: _Run, cmd: c.ContributeSeed) -> None:
    state = run.state
    _require_phase(state, Phase.BETTING, doing="contribute a client seed")
    _check_contribution(state, cmd.client_seed)
    player = cmd.player
    if player is not None:
        check_id(player, "player")
        if player != state.banker_player and not any(b.player == player for b in state.bets):
            raise NotYourTurn(f"{player!r} has no stake in this round: its bettors contribute (and the platform)")
    run.emit(e.ClientSeedContributed(PLATFORM if player is None else player, cmd.client_seed, cmd.by))


def _fix_client_seed(run: _Run) -> None:
    """The deal of a round with contributions: derive and record the client seed (folding it shuffles the
    shoe from the server seed, that client seed and the nonce; a stacked shoe keeps its order)."""
    state = run.state
    if state.client_seed_rule != CLIENT_SEED_RULE:
        raise DomainError(f"client seed rule {state.client_seed_rule!r} is not supported by this engine")
    derived = derive_client_seed(state.contributions)
    run.emit(e.ClientSeedFixed(derived, state.client_seed_rule, state.contributions))  # (its fold shuffles the shoe)


def _deal(run: _Run, cmd: c.Deal) -> None:
    state = run.state
    _require_phase(state, Phase.BETTING, doing="deal")
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
    dealt = tuple((seat, _text(shoe.cards[i])) for i, seat in enumerate(order))
    up_card = _text(shoe.cards[len(in_play)]) if profile.side_bet is not None else None
    run.emit(e.CardsDealt(dealt, up_card, cmd.by))
    _after_deal(run)


def _after_deal(run: _Run) -> None:
    state = run.state
    profile = state.rules
    if profile.player_draw is None:
        _showdown(run)
        return
    for seat in state.in_play:
        cards = state.cards(seat)
        value = evaluate(profile, cards)
        if value.is_pok:
            run.emit(e.PokDeclared(seat, _texts(cards), value.taem, value.label))
    up = run.state.up_card
    if profile.side_bet is not None and up is not None and up.points in profile.side_bet.up_card_points:
        run.emit(e.SideBetWindowOpened(_text(up)))
        return
    if _banker_pok(run):
        return
    _advance(run)


def _banker_pok(run: _Run) -> bool:
    """A banker's pok ends the round: every hand is compared at once."""
    state = run.state
    cards = state.banker_cards
    value = evaluate(state.rules, cards)
    if not value.is_pok:
        return False
    run.emit(e.PokDeclared(BANKER, _texts(cards), value.taem, value.label))
    _showdown(run)
    return True


def _advance(run: _Run) -> None:
    """Play every automatic step until someone must choose or the round is over."""
    profile = run.state.rules
    player_draw = profile.player_draw
    assert player_draw is not None
    while (seat := run.state.turn) is not None:
        action = player_draw.action(_taem(run.state.cards(seat)))
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
    action = banker_draw.action(_taem(run.state.banker_cards))
    if action == "draw":
        run.emit(e.CardDrawn(BANKER, run.next_text(), "auto"))
    elif action == "stand":
        run.emit(e.PlayerStood(BANKER, "auto"))
    else:
        return
    _showdown(run)


def _place_side_bet(run: _Run, cmd: c.PlaceSideBet) -> None:
    state = run.state
    _require_phase(state, Phase.SIDE_BETS, doing="place a side bet")
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
    _check_funds(stake, cmd.available, cmd.player, "the player's")
    run.emit(e.SideBetPlaced(cmd.seat, cmd.player, stake, stake, cmd.by))


def _close_side_bets(run: _Run, cmd: c.CloseSideBets | c.TimeOutTurn) -> None:
    state = run.state
    _require_phase(state, Phase.SIDE_BETS, doing="close the side bets")
    profile = state.rules
    natural = evaluate(profile, state.banker_cards).is_pok
    results = tuple(
        (b.seat, b.player, b.stake, settle_side_bet(profile, natural, b.stake).net) for b in state.side_bets
    )
    run.emit(e.SideBetsSettled(natural, results, cmd.by))
    if _banker_pok(run):
        return
    _advance(run)


def _player_action(run: _Run, seat: int, player: str, draw: bool, by: str) -> None:
    state = run.state
    _require_phase(state, Phase.PLAYER_TURNS, doing="draw" if draw else "stay")
    holder = state.holder(seat)
    if holder != player:
        raise NotYourTurn(f"seat {seat} belongs to another player", seat=seat)
    if state.turn != seat:
        raise NotYourTurn(f"it is seat {state.turn}'s turn, not seat {seat}'s", seat=seat, turn=state.turn)
    player_draw = state.rules.player_draw
    assert player_draw is not None
    if player_draw.action(_taem(state.cards(seat))) != "choose":
        raise DomainError(f"seat {seat} has no choice to make")
    if draw:
        run.emit(e.CardDrawn(seat, run.next_text(), "choice", by))
    else:
        run.emit(e.PlayerStood(seat, "choice", by))
    _advance(run)


def _draw(run: _Run, cmd: c.Draw) -> None:
    _player_action(run, cmd.seat, cmd.player, True, cmd.by)


def _stay(run: _Run, cmd: c.Stay) -> None:
    _player_action(run, cmd.seat, cmd.player, False, cmd.by)


def _banker_may_choose(state: RoundState, player: str | None, doing: str) -> None:
    _require_phase(state, Phase.BANKER_TURN, doing=doing)
    if state.banker_done:
        raise WrongPhase("the banker has already played")
    if player != state.banker_player:
        raise NotYourTurn("only the banker may play the banker's hand")
    banker_draw = state.rules.banker_draw
    assert banker_draw is not None
    if banker_draw.action(_taem(state.banker_cards)) != "choose":
        raise DomainError("the banker has no choice to make")


def _banker_reveal(run: _Run, cmd: c.BankerReveal) -> None:
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
    _reveal_and_settle(run, tuple(sorted(seats)), selective=True, by=cmd.by)
    if all(s in run.state.revealed for s in run.state.in_play):
        _showdown(run)


def _banker_play(run: _Run, cmd: c.BankerDraw | c.BankerStay) -> None:
    draw = isinstance(cmd, c.BankerDraw)
    _banker_may_choose(run.state, cmd.player, "draw" if draw else "stay")
    if draw:
        run.emit(e.CardDrawn(BANKER, run.next_text(), "choice", cmd.by))
    else:
        run.emit(e.PlayerStood(BANKER, "choice", cmd.by))
    _showdown(run)


def _time_out(run: _Run, cmd: c.TimeOutTurn) -> None:
    state = run.state
    if state.phase is Phase.SIDE_BETS:
        _close_side_bets(run, cmd)
        return
    _require_phase(state, Phase.PLAYER_TURNS, Phase.BANKER_TURN, doing="time out a turn")
    if state.phase is Phase.BANKER_TURN and state.banker_done:
        raise WrongPhase("the banker has already played")
    profile = state.rules
    seat = state.turn if state.phase is Phase.PLAYER_TURNS else BANKER
    rule = profile.player_draw if seat else profile.banker_draw
    assert seat is not None and rule is not None
    draws = rule.timeout_draws(_taem(state.cards(seat)))
    run.emit(e.TurnTimedOut(seat, "draw" if draws else "stay", cmd.by))
    if draws:
        run.emit(e.CardDrawn(seat, run.next_text(), "timeout"))
    else:
        run.emit(e.PlayerStood(seat, "timeout"))
    if seat == BANKER:
        _showdown(run)
    else:
        _advance(run)


def _reveal_and_settle(run: _Run, seats: tuple[int, ...], selective: bool, by: str = "") -> None:
    """Show ``seats`` and the banker's hand and settle their stakes (``by``: a selective reveal's sender)."""
    state = run.state
    profile = state.rules
    shown = tuple((s, _texts(state.cards(s))) for s in (*seats, BANKER))
    run.emit(e.HandsRevealed(seats, shown, selective, by))
    banker_value = evaluate(profile, state.banker_cards)
    for seat in seats:
        value = evaluate(profile, state.cards(seat))
        for bet in state.bets_on(seat):
            r = settle_values(profile, value, banker_value, bet.stake)
            run.emit(
                e.BetSettled(
                    seat,
                    bet.player,
                    bet.stake,
                    r.outcome.value,
                    str(r.multiplier),
                    r.gross,
                    r.commission,
                    r.player_net,
                    value.label,
                    banker_value.label,
                    r.ante_net,
                    r.bet_net,
                )
            )


def _showdown(run: _Run) -> None:
    """Reveal and settle every hand not yet settled, then settle the round, reveal the seed and close."""
    state = run.state
    remaining = tuple(s for s in state.in_play if s not in state.revealed)
    if remaining:
        _reveal_and_settle(run, remaining, selective=False)
    state = run.state
    house = state.banker_player is None
    owed = banker_commission(state.rules, state.banker_sum, house)
    nets = dict(state.nets)
    wallets = [(player, reserved, nets.get(player, 0)) for player, reserved in state.reserved]
    if not house:
        assert state.banker_player is not None
        wallets.append((state.banker_player, state.banker_reserved, state.banker_sum - owed))
    run.emit(
        e.RoundSettled(
            tuple(wallets),
            state.banker_sum,
            owed,
            state.player_commission + owed,
            state.banker_sum if house else 0,
        )
    )
    _reveal_seed_and_close(run, "settled")


def _reveal_seed_and_close(run: _Run, outcome: str) -> None:
    shoe = run.state.shoe
    if shoe is not None and shoe.server_seed:
        run.emit(e.SeedRevealed(shoe.server_seed.hex()))
    run.emit(e.RoundClosed(outcome))


def _void(run: _Run, cmd: c.VoidRound) -> None:
    state = run.state
    if state.phase in (Phase.NEW, Phase.SHOWDOWN, Phase.SETTLED, Phase.CLOSED):
        raise WrongPhase(f"cannot void a round that is {state.phase.value}", phase=state.phase.value)
    reason = cmd.reason.strip()
    if not reason:
        raise InvalidCommand("say why the round is voided", field="reason")
    wallets = list(state.reserved)
    if state.banker_player is not None and state.banker_reserved:
        wallets.append((state.banker_player, state.banker_reserved))
    run.emit(e.RoundVoided(reason, tuple(wallets), cmd.by))
    _reveal_seed_and_close(run, "voided")


# ---------------------------------------------------------------------------------------
# the commands: each one's handler and when legal_commands lists it


def _player_seat(state: RoundState, seat: int | None) -> bool:
    """``seat`` is a player's seat (or an ante position) of this round: not the banker's, not the operator."""
    return seat is not None and seat != BANKER and any(number == seat for number, _ in state.seats)


def _staked(state: RoundState, seat: int | None) -> bool:
    """The holder of player seat ``seat`` has its stake on it (an ante position has no holder: never)."""
    holder = state.holder(seat) if seat is not None else None
    return holder is not None and any(b.seat == seat and b.player == holder for b in state.bets)


def _banker_chooses(state: RoundState, seat: int | None) -> bool:
    """The banker's hand has a choice to make now, and ``seat`` plays it: the banker (0), or the operator
    (None) for the house."""
    if seat != BANKER and not (seat is None and state.banker_player is None):
        return False
    if state.phase is not Phase.BANKER_TURN or state.banker_done:
        return False
    banker_draw = state.rules.banker_draw
    assert banker_draw is not None
    return banker_draw.action(_taem(state.banker_cards)) == "choose"


def _player_chooses(state: RoundState, seat: int | None) -> bool:
    """It is player seat ``seat``'s turn and its hand has a choice to make."""
    if seat is None or state.phase is not Phase.PLAYER_TURNS or state.turn != seat or not _player_seat(state, seat):
        return False
    player_draw = state.rules.player_draw
    assert player_draw is not None
    return player_draw.action(_taem(state.cards(seat))) == "choose"


def _may_bet(state: RoundState, seat: int | None) -> bool:
    return state.phase is Phase.BETTING and _player_seat(state, seat) and not _staked(state, seat)


def _may_deal(state: RoundState, seat: int | None) -> bool:
    return seat is None and state.phase is Phase.BETTING and bool(state.bets)


def _may_contribute(state: RoundState, seat: int | None) -> bool:
    """In betting, in a round with contributions: the platform (the operator), the player-banker, and
    each seat's holder once its stake is in (before, it contributes with its stake)."""
    if state.phase is not Phase.BETTING or not state.client_seed_rule:
        return False
    if seat is None:
        return True
    if seat == BANKER:
        return state.banker_player is not None
    return _player_seat(state, seat) and _staked(state, seat)


def _may_side_bet(state: RoundState, seat: int | None) -> bool:
    if state.phase is not Phase.SIDE_BETS or not _player_seat(state, seat) or not _staked(state, seat):
        return False
    return not any(b.seat == seat for b in state.side_bets)


def _may_close_side_bets(state: RoundState, seat: int | None) -> bool:
    return seat is None and state.phase is Phase.SIDE_BETS


def _may_time_out(state: RoundState, seat: int | None) -> bool:
    phase = state.phase
    return seat is None and (
        phase in (Phase.SIDE_BETS, Phase.PLAYER_TURNS) or (phase is Phase.BANKER_TURN and not state.banker_done)
    )


def _may_reveal(state: RoundState, seat: int | None) -> bool:
    return _banker_chooses(state, seat) and state.rules.banker_selective_reveal


def _may_void(state: RoundState, seat: int | None) -> bool:
    return seat is None


class _Step(NamedTuple):
    """A round command's handler, and when it is legal for whom (None: never listed)."""

    decide: Callable[[_Run, Any], None]
    legal: Callable[[RoundState, int | None], bool] | None


_STEPS: Mapping[type[c.RoundCommand], _Step] = MappingProxyType(
    {  # in the order legal_commands lists them
        c.OpenRound: _Step(_open, None),  # (the table's StartRound opens a round: never a move in one)
        c.PlaceBet: _Step(_place_bet, _may_bet),
        c.Deal: _Step(_deal, _may_deal),
        c.ContributeSeed: _Step(_contribute, _may_contribute),
        c.PlaceSideBet: _Step(_place_side_bet, _may_side_bet),
        c.CloseSideBets: _Step(_close_side_bets, _may_close_side_bets),
        c.Draw: _Step(_draw, _player_chooses),
        c.Stay: _Step(_stay, _player_chooses),
        c.TimeOutTurn: _Step(_time_out, _may_time_out),
        c.BankerReveal: _Step(_banker_reveal, _may_reveal),
        c.BankerDraw: _Step(_banker_play, _banker_chooses),
        c.BankerStay: _Step(_banker_play, _banker_chooses),
        c.VoidRound: _Step(_void, _may_void),
    }
)
"""Every round command: the one table of the machine (its handlers, ``legal_commands``, ``COMMANDS``)."""

_HANDLERS: Mapping[type[c.RoundCommand], Callable[[_Run, Any], None]] = MappingProxyType(
    {kind: step.decide for kind, step in _STEPS.items()}
)
_LEGAL = tuple((kind.name, step.legal) for kind, step in _STEPS.items() if step.legal is not None)
_IDLE = frozenset({Phase.NEW, Phase.SHOWDOWN, Phase.SETTLED, Phase.CLOSED})  # nobody may do anything

COMMANDS: tuple[type[c.RoundCommand], ...] = tuple(_STEPS)
"""Every round command type the machine decides."""
LISTED_COMMANDS: tuple[str, ...] = tuple(name for name, _ in _LEGAL)
"""The names ``legal_commands`` may give (every command but the opening), in the order it lists them."""


def legal_commands(state: RoundState, seat: int | None = None) -> tuple[str, ...]:
    """What may be asked now: by the holder of ``seat`` (0: the banker), or by the operator (None)."""
    if state.phase in _IDLE:
        return ()
    return tuple(name for name, legal in _LEGAL if legal(state, seat))


def can(state: RoundState, command: c.RoundCommand) -> bool:
    """Whether ``command`` would be accepted now (pokerkit's ``can_x``)."""
    try:
        decide(state, command)
    except DomainError:
        return False
    return True


def wallet_changes(state: RoundState) -> dict[str, int]:
    """Each wallet's net for a settled round (empty before settlement or for a voided round)."""
    return dict(state.nets) if state.outcome == "settled" else {}
