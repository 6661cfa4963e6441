"""The batch fast path (``pokdeng_core.fastsettle``) equals ``settle`` exactly, for every profile."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from pokdeng_core import PROFILE_NAMES, Card, CardError, Profile, StakeError, canonical_deck, get_profile, settle
from pokdeng_core.fastsettle import (
    HAND_ID_SPACE,
    hand_cards,
    hand_id,
    hand_ids,
    settle_batch,
    settle_cards_batch,
    settle_table,
)
from pokdeng_core.settlement import settle_values

DECK = canonical_deck()
PROFILES = [
    get_profile("classic"),
    get_profile("classic", straights=True),
    get_profile("classic", straights=True, ace_low=True),
    *(get_profile(name) for name in PROFILE_NAMES if name != "classic"),
]


def random_hands(profile: Profile, count: int, seed: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Player and banker hand ids: disjoint two- or three-card hands (single deck), or two cards of eight decks."""
    rng = np.random.default_rng(seed)
    if profile.decks > 1:
        cards = rng.integers(0, 52, size=(count, 4))
        return hand_ids(cards[:, :2]), hand_ids(cards[:, 2:])
    cards = np.argsort(rng.random((count, 52)), axis=1)[:, :6]  # six distinct cards a row
    sizes = rng.integers(2, 4, size=(count, 2))
    player = np.where(sizes[:, 0] == 2, hand_ids(cards[:, 0:2]), hand_ids(cards[:, 0:3]))
    banker = np.where(sizes[:, 1] == 2, hand_ids(cards[:, 3:5]), hand_ids(cards[:, 3:6]))
    return player, banker


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.key)
def test_fast_path_equals_settle_on_random_hands(profile: Profile) -> None:
    count = 10_000
    player, banker = random_hands(profile, count, seed=20_260_101)
    rng = np.random.default_rng(7)
    stakes = rng.integers(1, 10**12, size=count, dtype=np.int64)
    if profile.wager_split:
        stakes *= 2
    nets = settle_batch(profile, player, banker, stakes)
    assert nets.dtype == np.int64
    expected = [
        settle(profile, player=hand_cards(int(p)), banker=hand_cards(int(b)), stake=int(s)).player_net
        for p, b, s in zip(player, banker, stakes, strict=True)
    ]
    assert nets.tolist() == expected


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.key)
def test_every_class_pair_at_small_stakes(profile: Profile) -> None:
    """Every pair of hand classes, at stakes where floors and ceilings bite (1, 2, 3, 7, 33, 100, 101)."""
    table = settle_table(profile)
    reps = table.representatives
    # Representatives may share cards, so this goes under the card check: the table's arithmetic
    # on every pair of classes against settle_values on the same hands.
    classes = np.array([table.class_of[hand_id(v.cards)] for v in reps])
    assert classes.tolist() == list(range(table.classes))
    numerators = table.numerators[np.repeat(classes, len(reps)) * table.classes + np.tile(classes, len(reps))]
    for stake in (2, 34, 100) if profile.wager_split else (1, 3, 7, 33, 100, 101):
        nets = table._nets(numerators, np.full(len(numerators), stake, dtype=np.int64))
        expected = [settle_values(profile, p, b, stake).player_net for p in reps for b in reps]
        assert nets.tolist() == expected


@settings(max_examples=100, deadline=None)
@given(
    profile=st.sampled_from(PROFILES),
    cards=st.permutations(DECK),
    sizes=st.tuples(st.sampled_from((2, 3)), st.sampled_from((2, 3))),
    stake=st.integers(1, 10**20),
)
def test_beyond_int64_the_fast_path_stays_exact(
    profile: Profile, cards: list[Card], sizes: tuple[int, int], stake: int
) -> None:
    if profile.wager_split:
        player, banker, stake = tuple(cards[:2]), tuple(cards[2:4]), 2 * stake
    else:
        player, banker = tuple(cards[: sizes[0]]), tuple(cards[3 : 3 + sizes[1]])
    (net,) = settle_batch(profile, [hand_id(player)], [hand_id(banker)], [stake])
    assert int(net) == settle(profile, player=player, banker=banker, stake=stake).player_net


def test_the_int64_bound() -> None:
    table = settle_table("kingmaker")
    assert table.denominator == 20  # 0.95 = 19/20
    player, banker = hand_id(tuple(map(Card.parse, ("3H", "4C")))), hand_id(tuple(map(Card.parse, ("2S", "3D"))))
    at_bound = settle_batch("kingmaker", [player], [banker], np.array([table.max_stake], dtype=np.int64))
    assert at_bound.dtype == np.int64 and int(at_bound[0]) == table.max_stake * 19 // 20
    beyond = settle_batch("kingmaker", [player], [banker], np.array([table.max_stake + 1], dtype=np.int64))
    assert beyond.dtype == object and beyond[0] == (table.max_stake + 1) * 19 // 20


def test_broadcasting_and_the_doc_example() -> None:
    ids = [hand_id(tuple(map(Card.parse, h.split()))) for h in ("9S 9D", "5S 4C")]
    bankers = [hand_id(tuple(map(Card.parse, h.split()))) for h in ("AC 4C 4D", "9H 9C")]
    assert settle_batch("classic", ids, bankers, 100).tolist() == [200, 100]
    assert settle_batch("classic", ids, bankers, [100, 300]).tolist() == [200, 300]
    cards = [tuple(map(Card.parse, h.split())) for h in ("9S 9D", "5S 4C")]
    assert settle_cards_batch("classic", cards, [hand_cards(b) for b in bankers], 100).tolist() == [200, 100]


class TestHandIds:
    def test_every_single_deck_hand_round_trips(self) -> None:
        hands = [*combinations(DECK, 2), *combinations(DECK, 3)]
        ids = [hand_id(h) for h in hands]
        assert len(set(ids)) == len(hands) == 1326 + 22100
        assert all(0 <= i < HAND_ID_SPACE for i in ids)
        assert all(hand_cards(i) == h for i, h in zip(ids, hands, strict=True))  # canonical order

    def test_order_does_not_matter_and_vectorised_ids_agree(self) -> None:
        rng = np.random.default_rng(3)
        cards = np.argsort(rng.random((500, 52)), axis=1)[:, :3]
        vectorised = hand_ids(cards)
        scalar = [hand_id([DECK[i] for i in row[::-1]]) for row in cards]
        assert vectorised.tolist() == scalar

    @pytest.mark.parametrize("bad", [np.zeros((3, 4), dtype=int), np.full((2, 2), 52), np.zeros((2, 2)) + 0.5])
    def test_bad_index_arrays(self, bad: NDArray[np.generic]) -> None:
        with pytest.raises(CardError):
            hand_ids(bad)

    def test_bad_hands(self) -> None:
        with pytest.raises(CardError):
            hand_id([DECK[0]])
        with pytest.raises(CardError):
            hand_cards(HAND_ID_SPACE)


class TestBatchRefusals:
    def ids(self, *hands: str) -> list[int]:
        return [hand_id(tuple(map(Card.parse, h.split()))) for h in hands]

    def test_a_card_twice_in_a_single_deck_hand(self) -> None:
        with pytest.raises(CardError, match="not a hand of profile classic"):
            settle_batch("classic", [hand_id((DECK[0], DECK[0]))], self.ids("2S 3D"), 100)
        # ... is a hand of the eight-deck ante shoe.
        assert settle_batch("ante", [hand_id((DECK[4], DECK[4]))], self.ids("2S 2D"), 100).tolist() == [100]

    def test_three_cards_in_ante(self) -> None:
        with pytest.raises(CardError, match="not a hand of profile ante"):
            settle_batch("ante", self.ids("2S 3D 4H"), self.ids("2C 2D"), 100)

    def test_shared_cards(self) -> None:
        with pytest.raises(CardError, match="share a card"):
            settle_batch("room", self.ids("2S 3D"), self.ids("2S 4D"), 100)

    def test_ids_out_of_range(self) -> None:
        with pytest.raises(CardError, match="run from"):
            settle_batch("room", [-1], self.ids("2S 4D"), 100)

    @pytest.mark.parametrize(
        ("stakes", "reason"),
        [
            ([0], "positive"),
            ([-5], "positive"),
            ([1.5], "whole number"),
            ([True], "whole number"),
            (np.array([True]), "not bool"),
            (np.array([1.0]), "whole numbers"),
            (["7"], "whole number"),
        ],
    )
    def test_bad_stakes(self, stakes: object, reason: str) -> None:
        with pytest.raises(StakeError, match=reason):
            settle_batch("room", self.ids("2S 3D"), self.ids("4S 4D"), stakes)  # type: ignore[arg-type]

    def test_odd_ante_wager(self) -> None:
        with pytest.raises(StakeError, match="even"):
            settle_batch("ante", self.ids("2S 3D"), self.ids("4S 4D"), [101])
