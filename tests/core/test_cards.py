"""RULES.md section 1: cards, their text notation and the tie-break order."""

from __future__ import annotations

import pytest

from pokdeng_core import Card, CardError, Rank, Suit, canonical_deck, format_cards, parse_card, parse_cards

AS, TEN_H, KD = Card(Rank.ACE, Suit.SPADES), Card(Rank.TEN, Suit.HEARTS), Card(Rank.KING, Suit.DIAMONDS)


class TestNotation:
    @pytest.mark.parametrize(
        "text",
        [
            "AS 10H KD",
            "AS TH KD",  # T for 10
            "as 10h kd",  # case-insensitive
            "aS tH Kd",
            "A♠ 10♥ K♦",  # suit symbols
            "A♠️ 10♥️ K♦️",  # emoji variation selectors (U+FE0F), as in seed 001
            "A♤ 10♡ K♢",  # the white suit symbols
            "AS, 10H, KD",  # commas
            "  AS   10H\tKD  ",  # any whitespace
            "1S 10H KD",  # the ace written as 1 (seed 001 writes "1♠️")
        ],
    )
    def test_one_hand_many_spellings(self, text: str) -> None:
        assert parse_cards(text) == (AS, TEN_H, KD)

    def test_rules_examples(self) -> None:
        assert parse_cards("9♠ 9♦") == (Card(Rank.NINE, Suit.SPADES), Card(Rank.NINE, Suit.DIAMONDS))
        assert parse_card("T♣") == Card(Rank.TEN, Suit.CLUBS)
        assert parse_card("tc") == parse_card("10C") == Card.parse("10♣")

    def test_iterables_of_tokens_or_cards(self) -> None:
        assert parse_cards(["AS", "10H", KD]) == (AS, TEN_H, KD)
        assert parse_cards((AS, TEN_H)) == (AS, TEN_H)
        assert parse_cards(AS) == (AS,)

    @pytest.mark.parametrize("card", canonical_deck(), ids=str)
    def test_round_trip(self, card: Card) -> None:
        assert parse_card(str(card)) == card
        assert parse_card(card.pretty) == card
        assert parse_card(str(card).lower()) == card

    def test_format(self) -> None:
        assert format_cards((AS, TEN_H, KD)) == "AS 10H KD"
        assert format_cards((AS, TEN_H, KD), pretty=True) == "A♠ 10♥ K♦"
        assert str(Card(Rank.TEN, Suit.CLUBS)) == "10C"  # 10 is written 10, never T

    @pytest.mark.parametrize("token", ["ZZ", "1", "10", "11H", "AX", "A", "♠A", "0S", "1OH", "A♠♠", "Ace", "S"])
    def test_bad_tokens_raise_card_error_naming_the_token(self, token: str) -> None:
        with pytest.raises(CardError) as error:
            parse_cards(f"AS {token} KD")
        assert repr(token) in str(error.value)
        assert isinstance(error.value, ValueError)

    @pytest.mark.parametrize("text", ["", "   ", ",", []])
    def test_no_cards(self, text: str | list[str]) -> None:
        with pytest.raises(CardError, match="no cards"):
            parse_cards(text)


class TestOrder:
    def test_points(self) -> None:
        assert [r.points for r in Rank] == [2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 0, 1]

    def test_tie_break_order_rank_then_suit(self) -> None:
        """A > K > ... > 2, then ♠ > ♥ > ♣ > ♦: comparing cards compares (rank, suit)."""
        ordered = parse_cards("AS AH AC AD KS KH 2S 2D")
        assert list(ordered) == sorted(ordered, reverse=True)
        assert max(parse_cards("QS KD KC")) == parse_card("KC")

    def test_canonical_deck_order_is_fixed(self) -> None:
        """The seeded shuffle starts from this order (docs/shuffle.md): ♠ ♥ ♣ ♦, each A 2 ... K."""
        deck = canonical_deck()
        assert format_cards(deck[:13]) == "AS 2S 3S 4S 5S 6S 7S 8S 9S 10S JS QS KS"
        assert [str(deck[i]) for i in (0, 13, 26, 39, 51)] == ["AS", "AH", "AC", "AD", "KD"]
        assert all(card.canonical_index == i for i, card in enumerate(deck))
        assert len(set(deck)) == 52
        assert canonical_deck(8) == deck * 8
        with pytest.raises(ValueError):
            canonical_deck(0)
