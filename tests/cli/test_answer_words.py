"""The dispute page's one line a stake says the hand's kind *and* its points, whatever the kind (issue #36: "each
seat in one line with its cards, points, class and reason"): two straights, two tongs or two sam lueang compare
their points next, so a reader needs them. Found by the page's browser test on a kingmaker banker's straight."""

from __future__ import annotations

import pytest

from pokdeng_service.web.answer import card_class, hand_words


@pytest.mark.parametrize(
    ("label", "points", "said"),
    [
        ("pok deng", 9, "pok deng 9"),
        ("pok", 8, "pok 8"),
        ("taem", 5, "taem 5"),
        ("normal", 0, "taem 0"),
        ("", 3, "taem 3"),
        ("straight", 5, "straight 5"),
        ("straight flush", 6, "straight flush 6"),
        ("tong", 1, "tong 1"),
        ("sam lueang", 0, "sam lueang 0"),
        ("song deng", 7, "song deng 7"),
        ("pok deng", None, "pok deng"),
    ],
)
def test_every_kind_of_hand_is_said_with_its_points(label: str, points: int | None, said: str) -> None:
    assert hand_words(label, points) == said


@pytest.mark.parametrize(
    ("cards", "kind"),
    [
        (["6♠", "4♥", "5♠"], "mixed suits"),
        (["7♠", "7♥"], "two of a kind"),
        (["7♠", "7♥", "7♣"], "three of a kind"),
        (["J♠", "Q♥", "K♣"], "three face cards"),
        (["2♦", "9♦", "5♦"], "three of a suit"),
        (["A♣", "K♣"], "two of a suit"),
        (["A♣"], ""),
    ],
)
def test_the_cards_class(cards: list[str], kind: str) -> None:
    assert card_class(cards) == kind
