"""Money: settling a stake, a side bet and a whole round in integer minor units (RULES.md section 2).

Rounding: a payout at a fractional multiplier is ``floor(stake * multiplier)``; a
commission is ``ceil(gross * rate)``. The house keeps the remainders. Every result
balances: ``player_net + banker_net + commission == 0`` for a stake, and for a round
the sum of every wallet's change, the house's change and the commission is zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from .cards import Card, CardError, CardsLike, parse_cards
from .evaluation import HandValue, Outcome, as_fraction, classic_multiplier, compiled, evaluate, hand_value
from .hands import HandKind
from .profiles import BankerKind, Profile, ProfileError, get_profile


class StakeError(ValueError):
    """A stake that is not a positive whole number of minor units (or, for ante, not even)."""


def floor_mul(amount: int, rate: Fraction) -> int:
    """``floor(amount * rate)`` in exact integer arithmetic."""
    return (amount * rate.numerator) // rate.denominator


def ceil_mul(amount: int, rate: Fraction) -> int:
    """``ceil(amount * rate)`` in exact integer arithmetic."""
    return -((-amount * rate.numerator) // rate.denominator)


def check_stake(profile: Profile, stake: object, what: str = "stake") -> int:
    if isinstance(stake, bool) or not isinstance(stake, int):
        raise StakeError(f"{what} must be a whole number of minor units, not {stake!r}")
    if stake <= 0:
        raise StakeError(f"{what} must be positive, not {stake}")
    if profile.wager_split and stake % 2:
        raise StakeError(f"an ante wager is split evenly into ante and bet, so it must be even, not {stake}")
    return stake


@dataclass(frozen=True, slots=True)
class StakeResult:
    """One stake settled against the banker.

    ``player_net`` is what the stake's wallet gains (negative: loses), after its
    commission; ``banker_net`` is the banker's side of this stake before any commission
    the banker owes on its round; ``commission`` is charged to the player.
    """

    outcome: Outcome
    multiplier: Fraction
    stake: int
    gross: int
    commission: int
    player_net: int
    banker_net: int
    player: HandValue
    banker: HandValue
    ante_net: int | None = None
    bet_net: int | None = None

    @property
    def winner(self) -> str:
        return {"player_wins": "player", "banker_wins": "banker", "tie": "tie"}[self.outcome.value]


def _cards(cards: CardsLike | tuple[Card, ...]) -> tuple[Card, ...]:
    if type(cards) is tuple and all(type(c) is Card for c in cards):
        return cards
    return parse_cards(cards)


def _known(rules: Profile, hand: object) -> HandValue | None:
    """The (cached) value of a hand given as a tuple of cards; None for anything else, to parse."""
    if type(hand) is tuple:
        try:
            return hand_value(rules, hand)
        except CardError:
            return None
    return None


_ZERO = Fraction(0)
_HALVES = (Fraction(0), Fraction(1, 2), Fraction(1))  # an ante net over its wager: 0, 1/2 or 1


def settle_values(profile: Profile, player: HandValue, banker: HandValue, stake: int) -> StakeResult:
    """Settle ``stake`` on ``player`` against ``banker`` (already evaluated under ``profile``).

    ``stake`` must already be valid (see ``check_stake``); this is the hot path.
    """
    rules = compiled(profile)
    if rules.ante:
        return _settle_ante(player, banker, stake)
    player_key = player.key
    banker_key = banker.key
    if player_key == banker_key:
        return StakeResult(Outcome.TIE, _ZERO, stake, 0, 0, 0, 0, player, banker)
    if player_key > banker_key:
        multiplier = as_fraction(classic_multiplier(player, banker)) if rules.classic else player.multiplier
        gross = stake * multiplier.numerator // multiplier.denominator
        commission = -(-gross * rules.commission_num // rules.commission_den) if rules.commission_num else 0
        return StakeResult(
            Outcome.PLAYER_WINS, multiplier, stake, gross, commission, gross - commission, -gross, player, banker
        )
    multiplier = as_fraction(classic_multiplier(banker, player)) if rules.classic else banker.multiplier
    floor = rules.floor
    if floor is not None and multiplier.numerator * floor.denominator < floor.numerator * multiplier.denominator:
        multiplier = floor  # kingmaker: a loser pays stake * max(1, banker's multiplier)
    gross = stake * multiplier.numerator // multiplier.denominator
    return StakeResult(Outcome.BANKER_WINS, multiplier, stake, gross, 0, -gross, gross, player, banker)


def _settle_ante(player: HandValue, banker: HandValue, wager: int) -> StakeResult:
    """Seed 001 as RULES.md section 3 (ante) resolves it; ``wager`` is even (half ante, half bet)."""
    half = wager // 2
    if player.value > banker.value:
        banker_plain_0_or_6 = banker.value in (0, 60) and not banker.special
        strong_pok = player.value >= 80 and player.special  # 8 or 9 with a flush or a pair
        bet_paid = player.special and (not banker_plain_0_or_6 or strong_pok)
        ante_net, bet_net, outcome = half, half if bet_paid else 0, Outcome.PLAYER_WINS
    elif player.value < banker.value:
        ante_net, bet_net, outcome = -half, -half if banker.special else 0, Outcome.BANKER_WINS
    else:
        ante_net, bet_net, outcome = 0, 0, Outcome.TIE
    net = ante_net + bet_net
    multiplier = _HALVES[abs(net) * 2 // wager]
    return StakeResult(outcome, multiplier, wager, abs(net), 0, net, -net, player, banker, ante_net, bet_net)


def _check_disjoint(hands: Sequence[tuple[Card, ...]]) -> None:
    """In a single-deck game no card is in two hands (nor twice in one)."""
    seen: set[Card] = set()
    for cards in hands:
        for card in cards:
            if card in seen:
                raise CardError(f"card {card} is dealt twice, but a single deck holds it once")
            seen.add(card)


def settle(
    profile: str | Profile,
    *,
    player: CardsLike,
    banker: CardsLike,
    stake: int,
) -> StakeResult:
    """Settle one stake on a player's hand against the banker's.

    >>> settle("classic", player="9S 9D", banker="AC 4C 4D", stake=100).player_net
    200
    >>> settle("ante", player="5C 5H", banker="AS 3D", stake=100).player_net
    100

    ``profile`` is a name or a ``Profile`` from ``get_profile``; hands are card text or
    cards; for ``ante`` the stake is the whole wager (ante plus bet).
    """
    rules = profile if isinstance(profile, Profile) else get_profile(profile)
    fast = compiled(rules)
    if type(stake) is int and stake > 0 and not (fast.wager_split and stake & 1):
        amount = stake
    else:
        amount = check_stake(rules, stake)
    player_value = _known(rules, player)
    if player_value is None:
        player_value = evaluate(rules, _cards(player))
    banker_value = _known(rules, banker)
    if banker_value is None:
        banker_value = evaluate(rules, _cards(banker))
    if fast.single_deck:
        banker_cards = banker_value.cards
        for card in player_value.cards:
            if card in banker_cards:
                raise CardError(f"card {card} is dealt twice, but a single deck holds it once")
    return settle_values(rules, player_value, banker_value, amount)


@dataclass(frozen=True, slots=True)
class SideBetResult:
    stake: int
    won: bool
    gross: int
    net: int


def settle_side_bet(profile: Profile, banker_natural: bool, side_stake: int) -> SideBetResult:
    """Kingmaker's side bet: pays ``floor(side stake * 1.2)`` on a banker natural, else is lost."""
    rule = profile.side_bet
    if rule is None:
        raise ProfileError(f"profile {profile.name} has no side bet")
    side_stake = check_stake(profile, side_stake, "side stake")
    if banker_natural:
        gross = floor_mul(side_stake, rule.payout_fraction)
        return SideBetResult(side_stake, True, gross, gross)
    return SideBetResult(side_stake, False, side_stake, -side_stake)


@dataclass(frozen=True, slots=True)
class PlayerHand:
    """A final hand to settle in a round: its cards, its stake and (kingmaker) a side stake."""

    cards: CardsLike
    stake: int
    side_stake: int = 0


@dataclass(frozen=True, slots=True)
class RoundSettlement:
    """A whole round settled.

    ``player_nets`` are the hands' wallet changes in order (main stake after commission,
    plus any side bet); ``banker_net`` is the banker's change after its own commission;
    ``commission`` is everything the operator takes (players' and banker's). They balance:
    ``sum(player_nets) + banker_net + commission == 0``. When the banker is the house,
    ``house_net`` is ``banker_net`` (otherwise zero: a player banker's wallet takes it).
    """

    banker: HandValue
    stakes: tuple[StakeResult, ...]
    side_bets: tuple[SideBetResult, ...]
    banker_net_before_commission: int
    banker_commission: int
    banker_net: int
    commission: int
    player_nets: tuple[int, ...] = field(default=())
    banker_is_house: bool = False

    @property
    def balance(self) -> int:
        """Always zero."""
        return sum(self.player_nets) + self.banker_net + self.commission

    @property
    def house_net(self) -> int:
        """The house's change as banker (zero under a player banker), before the commission it collects."""
        return self.banker_net if self.banker_is_house else 0


def banker_commission(profile: Profile, banker_net: int, banker_is_house: bool) -> int:
    """A player-banker pays the profile's rate on a positive net for the round, rounded up."""
    if banker_is_house or banker_net <= 0 or profile.banker_commission == "0":
        return 0
    return ceil_mul(banker_net, profile.banker_commission_rate)


def settle_round(
    profile: str | Profile,
    *,
    banker: CardsLike,
    hands: Sequence[PlayerHand | tuple[CardsLike, int]],
    banker_is_house: bool | None = None,
) -> RoundSettlement:
    """Settle every hand of a round against the banker, with side bets and commission.

    ``banker_is_house`` defaults to the profile's first banker kind (the house for classic,
    ante and kingmaker, a player for room). Cards are in deal order: the banker's first
    card is its up card, which must be an 8 or a 9 for side stakes (kingmaker). In a
    single-deck game no card may be in two hands; a hand backed by several wallets is
    listed once per stake, with the same cards.

    >>> r = settle_round("room", banker="2S 3D", hands=[("9H KC", 1000), ("4C 2C", 1000)],
    ...                  banker_is_house=False)
    >>> r.player_nets, r.banker_net, r.commission
    ((970, 1940), -3000, 90)
    """
    rules = get_profile(profile)
    house = rules.banker[0] is BankerKind.HOUSE if banker_is_house is None else banker_is_house
    banker_value = evaluate(rules, _cards(banker))
    items = [hand if isinstance(hand, PlayerHand) else PlayerHand(hand[0], hand[1]) for hand in hands]
    values = [evaluate(rules, _cards(item.cards)) for item in items]
    if rules.decks == 1:
        # The same hand may be listed once per wallet backing it; different hands share no card.
        distinct = {frozenset(v.cards): v.cards for v in values}
        _check_disjoint([banker_value.cards, *distinct.values()])
    natural = banker_value.kind is HandKind.POK
    settled = [
        _settle_hand(rules, banker_value, natural, item, value) for item, value in zip(items, values, strict=True)
    ]
    return _round_settlement(rules, banker_value, settled, house)


def _settle_hand(
    rules: Profile, banker_value: HandValue, natural: bool, item: PlayerHand, value: HandValue
) -> tuple[StakeResult, SideBetResult | None]:
    """One hand's stake against the banker, and its side stake (if any) on the banker's natural."""
    result = settle_values(rules, value, banker_value, check_stake(rules, item.stake))
    if not item.side_stake:
        return result, None
    return result, settle_side_bet(rules, natural, _check_side_stake(rules, banker_value, item))


def _round_settlement(
    rules: Profile,
    banker_value: HandValue,
    settled: Sequence[tuple[StakeResult, SideBetResult | None]],
    house: bool,
) -> RoundSettlement:
    """The hands' results summed: each wallet's net, the banker's before and after its commission."""
    nets: list[int] = []
    banker_sum = 0
    commission = 0
    for result, side in settled:
        net = result.player_net
        banker_sum += result.banker_net
        commission += result.commission
        if side is not None:
            net += side.net
            banker_sum -= side.net
        nets.append(net)
    owed = banker_commission(rules, banker_sum, house)
    return RoundSettlement(
        banker_value,
        tuple(result for result, _ in settled),
        tuple(side for _, side in settled if side is not None),
        banker_sum,
        owed,
        banker_sum - owed,
        commission + owed,
        tuple(nets),
        house,
    )


def _check_side_stake(profile: Profile, banker: HandValue, hand: PlayerHand) -> int:
    rule = profile.side_bet
    if rule is None:
        raise StakeError(f"profile {profile.name} has no side bet, so a side stake cannot be settled")
    amount = check_stake(profile, hand.side_stake, "side stake")
    if rule.stake_equals_main and amount != hand.stake:
        raise StakeError(f"a side stake equals its main stake ({hand.stake}), not {amount}")
    up = banker.cards[0]
    if up.points not in rule.up_card_points:
        raise StakeError(f"no side bets: the banker's up card {up} is not an 8 or a 9")
    return amount
