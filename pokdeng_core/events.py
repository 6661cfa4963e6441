"""The round's events: immutable facts in the past tense (docs/events.md is the catalogue).

Fields are plain values (str, int, bool, tuples) so that every event serialises
the same way everywhere. Cards are in RULES.md text notation (``"AS"``, ``"10H"``);
seat 0 is the banker; multipliers are exact fractions as text (``"2"``, ``"19/20"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Protocol


@dataclass(frozen=True, slots=True)
class RoundEvent:
    kind: ClassVar[str] = "round_event"


@dataclass(frozen=True, slots=True)
class RoundOpened(RoundEvent):
    kind: ClassVar[str] = "round_opened"
    round_id: str
    table_id: str
    round_no: int
    profile_name: str
    profile_version: int
    profile_options: tuple[tuple[str, bool], ...]
    engine_version: str
    banker_player: str | None  # None: the house is the banker
    seats: tuple[tuple[int, str | None], ...]  # (seat, holder); ante positions have no holder
    min_stake: int
    max_stake: int
    currency: str = "THB"  # ISO 4217, the table's (rounds opened before currencies: THB)
    by: str = ""  # who started the round (StartRound's sender: an operator, the service)


@dataclass(frozen=True, slots=True)
class ContributionsOpened(RoundEvent):
    """The round's client seed is not given at the opening: it is derived at the deal, by ``rule``, from
    the client seeds its bettors (and the platform) contribute during betting. Recorded just before
    ``ShuffleCommitted``; rounds of engines before 1.1.0 have no such event (their client seed is the
    one in ``ShuffleCommitted``)."""

    kind: ClassVar[str] = "contributions_opened"
    rule: str  # "pokdeng-client-seed-v1" (docs/shuffle.md section 13)


@dataclass(frozen=True, slots=True)
class ShuffleCommitted(RoundEvent):
    """The server seed's SHA-256, recorded before any card and before any client seed is contributed:
    the server seed is fixed from here on. ``client_seed`` is the shuffle's client seed in a round
    without contributions (older engines); in a round with ``contributions_opened`` it is empty and the
    client seed is fixed at the deal (``ClientSeedFixed``)."""

    kind: ClassVar[str] = "shuffle_committed"
    commitment: str
    client_seed: str
    nonce: int
    algorithm: str
    shoe_size: int


@dataclass(frozen=True, slots=True)
class ClientSeedContributed(RoundEvent):
    """A contribution to the round's client seed: a bettor's (or the player-banker's), or the platform's
    (``contributor`` empty). A later contribution of the same contributor replaces it."""

    kind: ClassVar[str] = "client_seed_contributed"
    contributor: str  # the player id; "" for the platform (no player id is empty)
    client_seed: str
    by: str = ""  # ContributeSeed's sender when not the contributor itself ("" in a bet's or the opening's)


@dataclass(frozen=True, slots=True)
class ClientSeedFixed(RoundEvent):
    """At the deal, before the first card: the client seed derived from the contributions by ``rule``.
    The shoe is the shuffle of (server seed, this client seed, nonce)."""

    kind: ClassVar[str] = "client_seed_fixed"
    client_seed: str  # 64 lowercase hex digits
    rule: str
    contributions: tuple[tuple[str, str], ...]  # (contributor, client seed), sorted by contributor


@dataclass(frozen=True, slots=True)
class BetPlaced(RoundEvent):
    """A stake accepted on a seat; ``reserved`` is held in the wallet until settlement."""

    kind: ClassVar[str] = "bet_placed"
    seat: int
    player: str
    stake: int
    reserved: int
    banker_reserved: int  # what the player-banker reserves for it (0 under the house)
    by: str = ""  # PlaceBet's sender when not the bettor itself (an operator, the service)


@dataclass(frozen=True, slots=True)
class CardsDealt(RoundEvent):
    """The deal: two cards to each hand in seat order, one at a time, the banker (seat 0) last."""

    kind: ClassVar[str] = "cards_dealt"
    cards: tuple[tuple[int, str], ...]  # (seat, card) in the order dealt
    banker_up_card: str | None  # kingmaker: the banker's first card, dealt face up
    by: str = ""  # who dealt (Deal's sender: an operator, the service)


@dataclass(frozen=True, slots=True)
class PokDeclared(RoundEvent):
    kind: ClassVar[str] = "pok_declared"
    seat: int
    cards: tuple[str, ...]
    taem: int
    label: str


@dataclass(frozen=True, slots=True)
class SideBetWindowOpened(RoundEvent):
    kind: ClassVar[str] = "side_bet_window_opened"
    up_card: str


@dataclass(frozen=True, slots=True)
class SideBetPlaced(RoundEvent):
    kind: ClassVar[str] = "side_bet_placed"
    seat: int
    player: str
    stake: int
    reserved: int
    by: str = ""  # PlaceSideBet's sender when not the bettor itself


@dataclass(frozen=True, slots=True)
class SideBetsSettled(RoundEvent):
    """The banker's natural check: side bets pay 1.2x on a natural, are lost otherwise."""

    kind: ClassVar[str] = "side_bets_settled"
    natural: bool
    results: tuple[tuple[int, str, int, int], ...]  # (seat, player, side stake, net)
    by: str = ""  # who closed the side bets (CloseSideBets, or the TimeOutTurn that closed them)


@dataclass(frozen=True, slots=True)
class TurnTimedOut(RoundEvent):
    """The hand to act did not act in time; the automatic action follows as its own event."""

    kind: ClassVar[str] = "turn_timed_out"
    seat: int
    action: str  # "draw" or "stay"
    by: str = ""  # who timed the turn out (an operator, the turn clock)


@dataclass(frozen=True, slots=True)
class CardDrawn(RoundEvent):
    kind: ClassVar[str] = "card_drawn"
    seat: int
    card: str
    reason: str  # "choice", "auto" (the profile's draw rule) or "timeout"
    by: str = ""  # a choice's sender (Draw, BankerDraw) when not the hand's holder itself (the house's: always)


@dataclass(frozen=True, slots=True)
class PlayerStood(RoundEvent):
    """A hand (seat 0: the banker) stays on its cards."""

    kind: ClassVar[str] = "player_stood"
    seat: int
    reason: str  # "choice", "auto" or "timeout"
    by: str = ""  # a choice's sender (Stay, BankerStay) when not the hand's holder itself (the house's: always)


@dataclass(frozen=True, slots=True)
class HandsRevealed(RoundEvent):
    """Hands shown and compared with the banker's current cards."""

    kind: ClassVar[str] = "hands_revealed"
    seats: tuple[int, ...]
    hands: tuple[tuple[int, tuple[str, ...]], ...]  # (seat, cards), seat 0 the banker
    selective: bool  # True: the banker's chosen reveal before it draws
    by: str = ""  # BankerReveal's sender when not the player-banker itself (the house's: always); a showdown: ""


@dataclass(frozen=True, slots=True)
class BetSettled(RoundEvent):
    """The payout of one stake: ``net`` is the wallet's gain after ``commission``."""

    kind: ClassVar[str] = "bet_settled"
    seat: int
    player: str
    stake: int
    outcome: str  # "player_wins", "banker_wins", "tie"
    multiplier: str
    gross: int
    commission: int
    net: int
    hand: str  # the player's hand label
    banker_hand: str
    ante_net: int | None = None
    bet_net: int | None = None


@dataclass(frozen=True, slots=True)
class RoundSettled(RoundEvent):
    """Every wallet's reservation released and net applied, the banker's commission, the totals.

    ``wallets`` lists (player, reserved, net) for every wallet with money in the round,
    the player-banker included; ``house_net`` is the house's change as banker.
    ``sum(nets) + house_net + commission == 0``.
    """

    kind: ClassVar[str] = "round_settled"
    wallets: tuple[tuple[str, int, int], ...]
    banker_net_before_commission: int
    banker_commission: int
    commission: int
    house_net: int


@dataclass(frozen=True, slots=True)
class RoundVoided(RoundEvent):
    """The round cannot finish: every reservation is released, no money moves."""

    kind: ClassVar[str] = "round_voided"
    reason: str
    wallets: tuple[tuple[str, int], ...]  # (player, reserved) released
    by: str = ""  # who voided it (the operator's principal)


@dataclass(frozen=True, slots=True)
class SeedRevealed(RoundEvent):
    kind: ClassVar[str] = "seed_revealed"
    server_seed: str  # hex


@dataclass(frozen=True, slots=True)
class RoundClosed(RoundEvent):
    kind: ClassVar[str] = "round_closed"
    outcome: str  # "settled" or "voided"


EVENT_TYPES: tuple[type[RoundEvent], ...] = (
    RoundOpened,
    ContributionsOpened,
    ShuffleCommitted,
    ClientSeedContributed,
    ClientSeedFixed,
    BetPlaced,
    CardsDealt,
    PokDeclared,
    SideBetWindowOpened,
    SideBetPlaced,
    SideBetsSettled,
    TurnTimedOut,
    CardDrawn,
    PlayerStood,
    HandsRevealed,
    BetSettled,
    RoundSettled,
    RoundVoided,
    SeedRevealed,
    RoundClosed,
)
EVENT_BY_KIND: Mapping[str, type[RoundEvent]] = MappingProxyType({cls.kind: cls for cls in EVENT_TYPES})
"""Each event class by its ``kind`` (read-only: the kinds are written once, in the classes)."""

ADDED_FIELDS: Mapping[str, Mapping[str, object]] = MappingProxyType(
    {
        RoundOpened.kind: MappingProxyType({"currency": "THB", "by": ""}),
        ClientSeedContributed.kind: MappingProxyType({"by": ""}),
        BetPlaced.kind: MappingProxyType({"by": ""}),
        CardsDealt.kind: MappingProxyType({"by": ""}),
        SideBetPlaced.kind: MappingProxyType({"by": ""}),
        SideBetsSettled.kind: MappingProxyType({"by": ""}),
        TurnTimedOut.kind: MappingProxyType({"by": ""}),
        CardDrawn.kind: MappingProxyType({"by": ""}),
        PlayerStood.kind: MappingProxyType({"by": ""}),
        HandsRevealed.kind: MappingProxyType({"by": ""}),
        RoundVoided.kind: MappingProxyType({"by": ""}),
    }
)
"""Fields added to an event with a default after rounds were recorded without them (docs/events.md): a
stored payload that lacks one reads as the default, and equals a replayed event that has the default."""


class StoredEvent(Protocol):
    """An event as a record holds it: its position in its stream, its kind and its payload (as JSON gives it
    back: lists for tuples; a field of ``ADDED_FIELDS`` absent from an older record). The service's stored
    events (``store.facts.Recorded``) are these, with their cause, time and chain digest."""

    @property
    def position(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def data(self) -> dict[str, Any]: ...
