"""Batch settlement at table speed: precomputed per-profile tables and numpy, exact to the minor unit.

Needs numpy (``pip install -e '.[test]'``); the rest of ``pokdeng_core`` does not, so this
module is not imported by the package itself.

Hand ids
--------
A hand id is a small integer naming a hand by the identities of its cards, whatever their
order. With ``i <= j <= k`` the cards' positions in the canonical deck
(``Card.canonical_index``, 0 = AS ... 51 = KD):

* two cards: ``i * 52 + j`` (0 .. 2703);
* three cards: ``2704 + (i * 52 + j) * 52 + k`` (2704 .. 143311).

An id whose hand cannot occur under the profile (a card twice in a single deck, three
cards for ante) settles to ``CardError``. ``hand_id``/``hand_cards`` convert one hand,
``hand_ids`` a whole array of canonical indices.

How it works
------------
Settlement depends on a hand only through a few of its values (the comparison key, the
multiplier, and for ante the value and whether it is special), so the hands of a profile
fall into a few hundred classes. For every pair of classes the table holds the player's
signed multiplier as an integer numerator over one denominator per profile, taken from
``settle_values`` itself, so the fast path agrees with the scalar one by construction:

* the player wins: ``gross = floor(stake * num / den)``, ``commission = ceil(gross * rate)``,
  net ``gross - commission``;
* the banker wins: net ``-floor(stake * |num| / den)``; a tie (``num == 0``) nets zero.

Money stays in int64 with no floats. ``SettleTable.max_stake`` is the largest stake for
which no intermediate product can overflow int64; a batch holding a greater stake (or
integers beyond int64) is settled in exact Python integers instead (dtype ``object``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .cards import CANONICAL_DECK, Card, CardError
from .evaluation import HandValue, Outcome, evaluate
from .profiles import Profile, get_profile
from .settlement import StakeError, settle_values

DECK_SIZE = 52
TWO_CARD_IDS = DECK_SIZE * DECK_SIZE
HAND_ID_SPACE = TWO_CARD_IDS + DECK_SIZE**3
_INT64_MAX = int(np.iinfo(np.int64).max)
_CARD_INDEX = MappingProxyType({card: index for index, card in enumerate(CANONICAL_DECK)})


def hand_id(cards: Iterable[Card]) -> int:
    """The id of a two- or three-card hand (any order)."""
    try:
        indices = sorted(_CARD_INDEX[card] for card in cards)
    except KeyError as error:
        raise CardError(f"not a card: {error.args[0]!r}") from None
    if len(indices) == 2:
        return indices[0] * DECK_SIZE + indices[1]
    if len(indices) == 3:
        return TWO_CARD_IDS + (indices[0] * DECK_SIZE + indices[1]) * DECK_SIZE + indices[2]
    raise CardError(f"a hand has two or three cards, not {len(indices)}")


def hand_cards(hand: int) -> tuple[Card, ...]:
    """The cards of a hand id, in canonical order (the inverse of ``hand_id``)."""
    if not 0 <= hand < HAND_ID_SPACE:
        raise CardError(f"hand id {hand} is outside 0..{HAND_ID_SPACE - 1}")
    if hand < TWO_CARD_IDS:
        return (CANONICAL_DECK[hand // DECK_SIZE], CANONICAL_DECK[hand % DECK_SIZE])
    rest, k = divmod(hand - TWO_CARD_IDS, DECK_SIZE)
    i, j = divmod(rest, DECK_SIZE)
    return (CANONICAL_DECK[i], CANONICAL_DECK[j], CANONICAL_DECK[k])


def hand_ids(indices: ArrayLike) -> NDArray[np.int64]:
    """Hand ids of an ``(n, 2)`` or ``(n, 3)`` array of canonical card indices (0..51), vectorised."""
    array = np.asarray(indices)
    if array.ndim != 2 or array.shape[1] not in (2, 3) or not np.issubdtype(array.dtype, np.integer):
        raise CardError(f"expected an (n, 2) or (n, 3) integer array of card indices, not shape {array.shape}")
    if array.size and (array.min() < 0 or array.max() >= DECK_SIZE):
        raise CardError("card indices run from 0 (AS) to 51 (KD)")
    ordered = np.sort(array.astype(np.int64), axis=1)
    if ordered.shape[1] == 2:
        return ordered[:, 0] * DECK_SIZE + ordered[:, 1]
    return TWO_CARD_IDS + (ordered[:, 0] * DECK_SIZE + ordered[:, 1]) * DECK_SIZE + ordered[:, 2]


def _valid_hand_ids(profile: Profile) -> list[int]:
    if profile.decks > 1:  # ante: two cards by identity, a card may repeat (eight decks)
        if profile.player_draw is not None:
            raise ValueError("multi-deck profiles with draws have no fast table (no such profile exists)")
        return [i * DECK_SIZE + j for i in range(DECK_SIZE) for j in range(i, DECK_SIZE)]
    two = [i * DECK_SIZE + j for i in range(DECK_SIZE) for j in range(i + 1, DECK_SIZE)]
    three = [
        TWO_CARD_IDS + (i * DECK_SIZE + j) * DECK_SIZE + k
        for i in range(DECK_SIZE)
        for j in range(i + 1, DECK_SIZE)
        for k in range(j + 1, DECK_SIZE)
    ]
    return two + three


def _signature(value: HandValue) -> tuple[Any, ...]:
    """Everything about a hand that settlement may read (all but its cards and label)."""
    return (value.key, value.multiplier, value.kind, value.taem, value.deng, value.special, value.value)


@dataclass(frozen=True, eq=False)
class SettleTable:
    """One profile's precomputed settlement (see the module text)."""

    profile: Profile
    class_of: NDArray[np.int32]  # hand id -> class, -1 where the hand cannot occur
    card_masks: NDArray[np.uint64]  # hand id -> a bit per card (single deck: hands must not share one)
    representatives: tuple[HandValue, ...]  # one hand of each class
    numerators: NDArray[np.int64]  # [player class * classes + banker class]: signed multiplier * denominator
    denominator: int
    commission_num: int
    commission_den: int
    max_stake: int

    @property
    def classes(self) -> int:
        return len(self.representatives)

    def settle(self, player_hand_ids: ArrayLike, banker_hand_ids: ArrayLike, stakes: ArrayLike) -> NDArray[Any]:
        """The player's net for each (player hand, banker hand, stake); the arrays broadcast."""
        player = _ids(player_hand_ids, "player")
        banker = _ids(banker_hand_ids, "banker")
        amounts = _stakes(stakes, self.profile)
        player_class = self.class_of[player]
        banker_class = self.class_of[banker]
        for classes, ids, who in ((player_class, player, "player"), (banker_class, banker, "banker")):
            bad = classes < 0
            if bad.any():
                first = int(np.asarray(ids)[bad].flat[0]) if np.ndim(ids) else int(ids)
                raise CardError(f"{who} hand id {first} is not a hand of profile {self.profile.key}")
        if self.profile.decks == 1 and (self.card_masks[player] & self.card_masks[banker]).any():
            raise CardError("a player's hand and the banker's share a card, but a single deck holds it once")
        numerators = self.numerators[player_class * self.classes + banker_class]
        if amounts.dtype != object and amounts.size and int(amounts.max()) > self.max_stake:
            amounts = amounts.astype(object)  # exact Python integers beyond the int64-safe bound
        if amounts.dtype == object:
            numerators = numerators.astype(object)
        return self._nets(numerators, amounts)

    def _nets(self, numerators: NDArray[Any], stakes: NDArray[Any]) -> NDArray[Any]:
        if self.denominator == 1 and not self.commission_num:
            whole: NDArray[Any] = stakes * numerators  # classic: whole multiples of the stake
            return whole
        sign = np.sign(numerators)
        gross = stakes * np.abs(numerators)
        if self.denominator != 1:
            gross //= self.denominator
        if not self.commission_num:
            nets: NDArray[Any] = sign * gross
            return nets
        commission = -((-gross * self.commission_num) // self.commission_den)
        paid: NDArray[Any] = np.where(sign > 0, gross - commission, sign * gross)
        return paid


def _ids(ids: ArrayLike, who: str) -> NDArray[np.intp]:
    array = np.asarray(ids)
    if not np.issubdtype(array.dtype, np.integer):
        raise CardError(f"{who} hand ids must be integers, not {array.dtype}")
    if array.size and (array.min() < 0 or array.max() >= HAND_ID_SPACE):
        raise CardError(f"{who} hand ids run from 0 to {HAND_ID_SPACE - 1}")
    return array.astype(np.intp, copy=False)


def _stakes(stakes: ArrayLike, profile: Profile) -> NDArray[Any]:
    """Stakes as int64, or as Python ints (dtype object) when some do not fit in int64.

    An ndarray is checked by dtype; anything else (a number, a list) element by element,
    so that ``True`` or ``2.0`` is refused rather than converted.
    """
    array: NDArray[Any]
    if isinstance(stakes, np.ndarray) and stakes.dtype != object:
        if stakes.dtype == np.bool_ or not np.issubdtype(stakes.dtype, np.integer):
            raise StakeError(f"stakes must be whole numbers of minor units, not {stakes.dtype}")
        if np.issubdtype(stakes.dtype, np.unsignedinteger) and stakes.size and int(stakes.max()) > _INT64_MAX:
            array = np.array([int(s) for s in stakes.flat], dtype=object).reshape(stakes.shape)
        else:
            array = stakes.astype(np.int64, copy=False)
    else:
        items = np.array(stakes, dtype=object)
        for stake in items.flat:
            if isinstance(stake, bool) or not isinstance(stake, int | np.integer):
                raise StakeError(f"a stake must be a whole number of minor units, not {stake!r}")
        whole = [int(s) for s in items.flat]
        fits = all(-_INT64_MAX <= s <= _INT64_MAX for s in whole)
        array = np.array(whole, dtype=np.int64 if fits else object).reshape(items.shape)
    if array.size:
        if (array <= 0).any():
            raise StakeError(f"a stake must be positive, not {array[array <= 0].flat[0]}")
        if profile.wager_split and (array % 2 != 0).any():
            odd = array[array % 2 != 0].flat[0]
            raise StakeError(f"an ante wager is split evenly into ante and bet, so it must be even, not {odd}")
    return array


def settle_table(profile: str | Profile) -> SettleTable:
    """The (cached) table of ``profile``; building one takes a fraction of a second."""
    return _settle_table(get_profile(profile))


@lru_cache(maxsize=32)
def _settle_table(profile: Profile) -> SettleTable:
    return _build(profile)


def _build(profile: Profile) -> SettleTable:
    class_of = np.full(HAND_ID_SPACE, -1, dtype=np.int32)
    masks = np.zeros(HAND_ID_SPACE, dtype=np.uint64)
    index_of: dict[tuple[Any, ...], int] = {}
    representatives: list[HandValue] = []
    for hand in _valid_hand_ids(profile):
        cards = hand_cards(hand)
        value = evaluate(profile, cards)
        signature = _signature(value)
        cls = index_of.get(signature)
        if cls is None:
            cls = index_of[signature] = len(representatives)
            representatives.append(value)
        class_of[hand] = cls
        mask = 0
        for card in cards:
            mask |= 1 << _CARD_INDEX[card]
        masks[hand] = mask
    # The player's signed multiplier for each pair of classes, straight from the scalar path.
    signed: list[Fraction] = []
    for player in representatives:
        for banker in representatives:
            result = settle_values(profile, player, banker, 2)
            sign = {Outcome.PLAYER_WINS: 1, Outcome.BANKER_WINS: -1, Outcome.TIE: 0}[result.outcome]
            signed.append(sign * result.multiplier)
    denominator = math.lcm(*(m.denominator for m in signed))
    numerators = np.array([int(m * denominator) for m in signed], dtype=np.int64)
    rate = profile.player_commission_rate
    largest = max(1, int(np.abs(numerators).max())) * max(1, rate.numerator)
    for array in (class_of, masks, numerators):
        array.setflags(write=False)  # the table is cached and shared: nobody may change it
    return SettleTable(
        profile,
        class_of,
        masks,
        tuple(representatives),
        numerators,
        denominator,
        rate.numerator,
        rate.denominator,
        _INT64_MAX // largest,
    )


def settle_batch(
    profile: str | Profile,
    player_hand_ids: ArrayLike,
    banker_hand_ids: ArrayLike,
    stakes: ArrayLike,
) -> NDArray[Any]:
    """The player's net (minor units) for each stake, exactly as ``settle`` gives it.

    ``player_hand_ids``, ``banker_hand_ids`` and ``stakes`` broadcast together (a single
    stake for all is fine). The result is int64, or ``object`` (Python ints) when a stake
    exceeds ``settle_table(profile).max_stake``. Invalid hands raise ``CardError``,
    invalid stakes ``StakeError``.

    >>> from pokdeng_core import parse_cards
    >>> ids = [hand_id(parse_cards("9S 9D")), hand_id(parse_cards("5S 4C"))]
    >>> settle_batch("classic", ids, [hand_id(parse_cards("AC 4C 4D")), hand_id(parse_cards("9H 9C"))], 100)
    array([200, 100])
    """
    return settle_table(profile).settle(player_hand_ids, banker_hand_ids, stakes)


def settle_cards_batch(
    profile: str | Profile,
    players: Sequence[Iterable[Card]],
    bankers: Sequence[Iterable[Card]],
    stakes: ArrayLike,
) -> NDArray[Any]:
    """``settle_batch`` for hands given as cards (converted to ids in Python first)."""
    return settle_batch(profile, [hand_id(h) for h in players], [hand_id(h) for h in bankers], stakes)
