"""Every worked example of the four original rule texts, as the rules contract (docs/rules.md) resolves them.

* seed 000: the traditional game (classic profile), its scoring examples, its hand-ranking
  table and the straights option;
* seed 001: the live-casino ante and bet game (ante profile);
* seed 002: the online room with a player banker (room profile), examples 1-6 and the wallet table;
* seed 003: Kingmaker Pok Deng (kingmaker profile), examples 1-6, the wallet and side-bet tables.

Where a seed shows a hand only by its total and name (seeds 002 and 003), the test builds
concrete cards with that total and name and says so. Money is in minor units: $10 is 1000.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from pokdeng_core import (
    HandKind,
    HandValue,
    Outcome,
    PlayerHand,
    evaluate,
    get_profile,
    parse_cards,
    settle,
    settle_round,
    settle_side_bet,
    taem,
)
from pokdeng_core.hands import ante_is_special, ante_value

PW, BW, TIE = Outcome.PLAYER_WINS, Outcome.BANKER_WINS, Outcome.TIE


def value(profile: str, cards: str, **options: bool) -> HandValue:
    return evaluate(get_profile(profile, **options), parse_cards(cards))


# --------------------------------------------------------------------------------------------
# seed 000: the traditional game (classic)
# --------------------------------------------------------------------------------------------


class TestSeed000CardValues:
    @pytest.mark.parametrize(
        ("cards", "points"),
        [
            ("3♠ 2♥", 5),  # "a hand consisting of a 3 and a 2 has a value of five taem"
            ("7♠ 8♥", 5),  # "a 7 and an 8 ... fifteen, has a one's digit of five"
            ("J♠ 5♥", 5),  # "a jack and a 5 also has a value of five taem"
            ("10♣ Q♦ K♥", 0),  # 10, J, Q, K count zero (or ten: the ones digit is the same)
            ("A♣ A♦", 2),  # each ace has a value of one
        ],
    )
    def test_taem_is_the_ones_digit(self, cards: str, points: int) -> None:
        assert taem(parse_cards(cards)) == points

    @pytest.mark.parametrize(
        ("cards", "deng"),
        [
            ("2♠ 9♠", 2),  # song deng: two cards of one suit
            ("7♠ 7♦", 2),  # song deng: a pair
            ("2♠ 3♠ 9♠", 3),  # sam deng: three cards of one suit
            ("2♠ 2♦ 9♠", 1),  # three cards, a pair among them: no deng
            ("2♠ 9♦", 1),
        ],
    )
    def test_deng_of_a_normal_hand(self, cards: str, deng: int) -> None:
        assert value("classic", cards).deng == deng

    def test_pok_is_the_first_two_cards_at_8_or_9(self) -> None:
        assert value("classic", "J♦ 9♥").kind is HandKind.POK
        assert value("classic", "4♠ 4♥").kind is HandKind.POK  # 8
        assert value("classic", "A♣ 4♣ 4♦").kind is HandKind.NORMAL  # nine taem, but three cards


class TestSeed000ScoringExamples:
    """The worked examples of "Scoring", with the taem and deng the text gives each hand."""

    @pytest.mark.parametrize(
        ("cards", "kind", "points", "deng"),
        [
            ("9♠ 9♦", HandKind.POK, 8, 2),  # "a pok deng of 9♠ 9♦, which has eight taem two deng"
            ("A♣ 4♣ 4♦", HandKind.NORMAL, 9, 1),  # "a normal hand of A♣ 4♣ 4♦ ... nine taem one deng"
            ("5♠ 4♣", HandKind.POK, 9, 1),  # "a pok of 5♠ 4♣, which has nine taem one deng"
            ("6♣ 4♣ 5♣", HandKind.NORMAL, 5, 3),  # "five taem three deng"
            ("K♥ 2♠ A♣", HandKind.NORMAL, 3, 1),  # "three taem one deng"
            ("K♥ 2♠ 3♣", HandKind.NORMAL, 5, 1),  # "five taem one deng"
            ("2♠ 3♠", HandKind.NORMAL, 5, 2),  # "five taem two deng"
        ],
    )
    def test_the_hands_of_the_examples(self, cards: str, kind: HandKind, points: int, deng: int) -> None:
        hand = value("classic", cards)
        assert (hand.kind, hand.taem, hand.deng) == (kind, points, deng)

    @pytest.mark.parametrize(
        ("player", "banker", "net", "why"),
        [
            ("9♠ 9♦", "A♣ 4♣ 4♦", 200, "pok type beats normal; twice the bet for two deng"),
            ("5♠ 4♣", "9♠ 9♦", 100, "both pok: nine taem beats eight; one deng"),
            ("6♣ 4♣ 5♣", "K♥ 2♠ A♣", 300, "taem 5 beats 3: three times for three deng"),
            ("6♣ 4♣ 5♣", "K♥ 2♠ 3♣", 200, "taem tied: the difference of deng, 3 - 1"),
            ("6♣ 4♣ 5♣", "2♠ 3♠", 100, "taem tied: the difference of deng, 3 - 2"),
        ],
    )
    def test_examples_settle_as_the_text_says(self, player: str, banker: str, net: int, why: str) -> None:
        assert settle("classic", player=player, banker=banker, stake=100).player_net == net, why
        # The dealer's side of the same comparison is the mirror image (classic is symmetric).
        assert settle("classic", player=banker, banker=player, stake=100).player_net == -net, why

    @pytest.mark.parametrize(
        ("tong", "sam_lueang"),
        [("7♠ 7♥ 7♣", "Q♣ J♣ J♦"), ("K♣ K♦ K♥", "J♠ Q♠ K♠"), ("2♠ 2♥ 2♦", "Q♥ Q♦ J♥")],
    )
    def test_tong_against_sam_lueang_pays_two(self, tong: str, sam_lueang: str) -> None:
        """Seed: "The hand with tong wins two times the bet. (This comes from five deng minus three deng.)"."""
        assert settle("classic", player=tong, banker=sam_lueang, stake=100).player_net == 200
        assert settle("classic", player=sam_lueang, banker=tong, stake=100).player_net == -200

    def test_hand_types_highest_first_pok_tong_sam_lueang_normal(self) -> None:
        # pok (one deng) beats tong; tong beats sam lueang (2x); sam lueang beats a normal 9 (3x).
        assert settle("classic", player="5♠ 4♣", banker="7♠ 7♥ 7♣", stake=100).player_net == 100
        assert settle("classic", player="Q♣ J♣ J♦", banker="A♣ 4♣ 4♦", stake=100).player_net == 300
        assert settle("classic", player="7♠ 7♥ 7♣", banker="A♣ 4♣ 4♦", stake=100).player_net == 500

    def test_equal_type_taem_and_deng_tie(self) -> None:
        result = settle("classic", player="2♠ 3♦", banker="A♥ 4♣", stake=100)
        assert (result.outcome, result.player_net) == (TIE, 0)

    def test_seventeen_hands_at_most_dealer_included(self) -> None:
        classic = get_profile("classic")
        assert classic.decks == 1 and classic.max_hands + 1 == 17
        assert (classic.max_hands + 1) * 3 <= 52  # "seventeen is the maximum ... before cards would run out"


class TestSeed000HandRankingTable:
    """The "Hand Rankings" table: each example hand with its taem and deng.

    Straight rows are read with the straights option on; the other rows with the classic
    default (off), under which J♠ Q♠ K♠ is the table's sam lueang.
    """

    @pytest.mark.parametrize(
        ("cards", "straights", "kind", "points", "deng"),
        [
            ("J♦ 9♥", False, HandKind.POK, 9, 1),
            ("9♠ 9♦", False, HandKind.POK, 8, 2),
            ("7♠ 7♥ 7♣", False, HandKind.TONG, 1, 5),
            ("K♣ K♦ K♥", False, HandKind.TONG, 0, 5),
            ("5♦ 6♦ 7♦", True, HandKind.STRAIGHT_FLUSH, 8, 5),
            ("2♥ 3♥ 4♥", True, HandKind.STRAIGHT_FLUSH, 9, 5),
            ("2♠ 3♦ 4♣", True, HandKind.STRAIGHT, 9, 3),
            ("7♣ 8♣ 9♥", True, HandKind.STRAIGHT, 4, 3),
            ("Q♣ J♣ J♦", False, HandKind.SAM_LUEANG, 0, 3),
            ("J♠ Q♠ K♠", False, HandKind.SAM_LUEANG, 0, 3),
            ("A♣ 4♣", False, HandKind.NORMAL, 5, 2),
            ("5♥ 7♥ 7♠", False, HandKind.NORMAL, 9, 1),
        ],
    )
    def test_row(self, cards: str, straights: bool, kind: HandKind, points: int, deng: int) -> None:
        hand = value("classic", cards, straights=straights)
        assert (hand.kind, hand.taem, hand.deng) == (kind, points, deng)

    def test_with_straights_on_j_q_k_of_one_suit_is_a_straight_flush(self) -> None:
        """RULES.md section 1: a hand that is several special hands takes the highest."""
        hand = value("classic", "J♠ Q♠ K♠", straights=True)
        assert (hand.kind, hand.deng) == (HandKind.STRAIGHT_FLUSH, 5)

    @pytest.mark.parametrize(("cards", "points", "deng"), [("6♣ 4♣ 5♣", 5, 3), ("5♦ 6♦ 7♦", 8, 3), ("2♠ 3♦ 4♣", 9, 1)])
    def test_straights_off_by_default_make_normal_hands(self, cards: str, points: int, deng: int) -> None:
        """RULES.md: "Default off: the worked example 6♣ 4♣ 5♣ is a normal hand of taem 5 and deng 3"."""
        assert get_profile("classic").straights is False
        hand = value("classic", cards)
        assert (hand.kind, hand.taem, hand.deng) == (HandKind.NORMAL, points, deng)


class TestSeed000StraightsOption:
    """Seed: "riang" (straight, 3 deng) and "riang plus" (straight flush, 5 deng); no wrap-around."""

    @pytest.mark.parametrize(
        ("cards", "high", "low"),
        [
            ("Q♠ K♦ A♣", HandKind.STRAIGHT, HandKind.NORMAL),  # A high only / A low only
            ("A♠ 2♦ 3♣", HandKind.NORMAL, HandKind.STRAIGHT),
            ("K♠ A♦ 2♣", HandKind.NORMAL, HandKind.NORMAL),  # "K-A-2 not allowed"
            ("Q♥ K♥ A♥", HandKind.STRAIGHT_FLUSH, HandKind.NORMAL),
            ("A♥ 2♥ 3♥", HandKind.NORMAL, HandKind.STRAIGHT_FLUSH),
            ("J♠ Q♦ K♣", HandKind.STRAIGHT, HandKind.STRAIGHT),  # a straight either way, not sam lueang
            ("9♠ 10♦ J♣", HandKind.STRAIGHT, HandKind.STRAIGHT),
        ],
    )
    def test_ace_high_or_ace_low(self, cards: str, high: HandKind, low: HandKind) -> None:
        assert value("classic", cards, straights=True).kind is high
        assert value("classic", cards, straights=True, ace_low=True).kind is low

    def test_straights_rank_between_tong_and_sam_lueang(self) -> None:
        classic = get_profile("classic", straights=True)
        tong, flush, straight = "7♠ 7♥ 7♣", "5♦ 6♦ 7♦", "2♠ 3♦ 4♣"
        # tong beats a straight flush (paid 5), which beats a straight (5), which beats sam lueang (3).
        assert settle(classic, player=tong, banker=flush, stake=100).player_net == 500
        assert settle(classic, player=flush, banker=straight, stake=100).player_net == 500
        assert settle(classic, player=straight, banker="Q♣ J♣ J♦", stake=100).player_net == 300
        # ... and a straight flush against sam lueang is not the tong exception: its 5 deng.
        assert settle(classic, player=flush, banker="Q♣ J♣ J♦", stake=100).player_net == 500

    def test_two_straights_compare_taem_then_deng(self) -> None:
        classic = get_profile("classic", straights=True)
        # 2♠ 3♦ 4♣ (taem 9) beats 7♣ 8♣ 9♥ (taem 4) and is paid its 3 deng.
        assert settle(classic, player="2♠ 3♦ 4♣", banker="7♣ 8♣ 9♥", stake=100).player_net == 300


class TestSeed000SharedHands:
    def test_several_wallets_back_one_hand_and_settle_by_its_result(self) -> None:
        """RULES.md section 3, classic: "every backer settles by its result" (the shared hand)."""
        round_ = settle_round("classic", banker="K♥ 2♠ A♣", hands=[("6♣ 4♣ 5♣", 100), ("6♣ 4♣ 5♣", 250)])
        assert round_.player_nets == (300, 750)
        assert round_.banker_net == -1050 and round_.balance == 0


# --------------------------------------------------------------------------------------------
# seed 001: ante and bet (ante)
# --------------------------------------------------------------------------------------------


class TestSeed001:
    def test_eight_decks_five_positions_no_draws_house_banker(self) -> None:
        ante = get_profile("ante")
        assert (ante.decks, ante.fixed_positions, ante.player_draw, ante.banker_draw) == (8, 5, None, None)
        assert ante.wager_split

    @pytest.mark.parametrize(
        ("player", "banker", "net", "ante_net", "bet_net", "example"),
        [
            ("7♥️ 6♣️", "5♦️ 6♠️", 50, 50, 0, "No special combination: only the ante, 1 to 1"),
            ("J♣️ 7♥️", "3♠️ 4♦️", 0, 0, 0, "Tie game: both ante and bet refunded"),
            ("5♣️ 5♥️", "1♠️ 3♦️", 100, 50, 50, "Player wins with a special combination (7.4): ante and bet"),
            ("10♦️ J♣️", "2♠️ 4♥️", 50, 50, 0, "Banker has 6 points: only the ante (player 7.2)"),
            ("J♦️ 8♦️", "4♣️ 6♥️", 100, 50, 50, "Player wins 8 points with a flush against banker 0: both"),
        ],
    )
    def test_the_five_examples(
        self, player: str, banker: str, net: int, ante_net: int, bet_net: int, example: str
    ) -> None:
        # The cards are written as in the seed, emoji variation selectors and the ace as "1" included.
        result = settle("ante", player=player, banker=banker, stake=100)  # "placed bet 100": 50 ante, 50 bet
        assert (result.player_net, result.ante_net, result.bet_net) == (net, ante_net, bet_net), example

    def test_example_values(self) -> None:
        assert ante_value(parse_cards("5♦ 6♠")) == 10  # "(1point)"
        assert ante_value(parse_cards("7♥ 6♣")) == 30  # "(3 points)"
        assert ante_value(parse_cards("6♠ 8♥")) == 40  # "a 6 and a 8 ... 4"
        assert ante_value(parse_cards("5♣ 5♥")) == 74  # "(7.4 points)"
        assert ante_value(parse_cards("10♦ J♣")) == 72  # "(7.2 points)"
        assert ante_value(parse_cards("J♦ 8♦")) == 80  # "(8 points with flush)"
        assert ante_value(parse_cards("4♣ 6♣")) == 71  # "zero flush (7.1 points)"

    # 9 > 8 > AK Flush > Special Pairs > Face-card Combination > 10 and face card > Zero Flush > 7 > ... > 0
    ORDER = (
        ("4♠ 5♥", 90),
        ("3♠ 5♥", 80),
        ("A♠ K♠", 75),
        ("6♣ 6♥", 74),
        ("J♣ Q♦", 73),
        ("10♦ K♣", 72),
        ("3♥ 7♥", 71),
        ("J♣ 7♥", 70),
        ("2♠ 4♥", 60),
        ("2♣ 3♦", 50),
        ("A♣ 3♦", 40),
        ("K♦ 3♠", 30),
        ("9♣ 3♦", 20),
        ("4♦ 7♣", 10),
        ("4♣ 6♥", 0),
    )

    def test_value_order(self) -> None:
        values = [ante_value(parse_cards(cards)) for cards, _ in self.ORDER]
        assert values == [v for _, v in self.ORDER]
        assert values == sorted(values, reverse=True)

    @pytest.mark.parametrize("i", range(len(ORDER) - 1))
    def test_each_value_beats_the_next(self, i: int) -> None:
        higher, lower = self.ORDER[i][0], self.ORDER[i + 1][0]
        assert settle("ante", player=higher, banker=lower, stake=100).outcome is PW
        assert settle("ante", player=lower, banker=higher, stake=100).outcome is BW

    @pytest.mark.parametrize(
        ("cards", "expected"),
        [
            ("A♥ 9♥", 71),  # zero flush A-9 (RULES.md: "A-9, 2-8, 3-7, 4-6, 5-5")
            ("2♦ 8♦", 71),
            ("5♠ 5♠", 74),  # "with eight decks a one-suit 5-5 is a special pair"
            ("10♠ 10♥", 74),
            ("A♣ A♦", 74),
            ("K♠ K♥", 73),  # face-card combination: pairs included
            ("Q♥ K♥", 73),  # ... and one suit
            ("10♥ J♥", 72),  # 10 and face card, one suit or not
            ("10♥ A♥", 10),  # a 10 with an ace is not a combination: a one-suit 1
            ("A♦ K♣", 10),  # A and K of two suits: 1 point
            ("4♣ 4♦", 80),  # "the 8-point 4-4 and 9-9 rank by their taem"
            ("9♣ 9♦", 80),
            ("2♣ 2♦", 40),
            ("7♣ 7♦", 40),
        ],
    )
    def test_combinations_and_other_pairs(self, cards: str, expected: int) -> None:
        assert ante_value(parse_cards(cards)) == expected

    def test_equal_values_tie_even_zero_flushes(self) -> None:
        """Seed: "both Banker and Player have a zero flush (7.1 points), resulting in a tie"."""
        result = settle("ante", player="4♣ 6♣", banker="3♥ 7♥", stake=100)
        assert (result.outcome, result.player_net) == (TIE, 0)
        # A-9 is a zero flush too (this was a bug: A-9 of one suit valued 0).
        assert settle("ante", player="A♥ 9♥", banker="2♦ 8♦", stake=100).player_net == 0

    @pytest.mark.parametrize(
        ("player", "banker", "net", "why"),
        [
            ("5♣ 5♥", "2♠ 4♥", 50, "special pair against a plain 6: ante only"),
            ("2♥ 5♥", "4♣ 6♥", 50, "a 7 flush against a plain 0: ante only"),
            ("J♦ 8♦", "2♠ 4♥", 100, "8 with a flush against a plain 6: both"),
            ("9♣ 9♦", "4♣ 6♥", 100, "8 with a pair (9-9) against a plain 0: both"),
            ("4♠ 5♠", "4♣ 6♥", 100, "9 with a flush against a plain 0: both"),
            ("3♠ 5♥", "4♣ 6♥", 50, "a plain 8 is not special at all: ante only"),
            ("5♣ 5♥", "3♣ 3♦", 100, "a 6 with a pair is not a plain 6: both"),
            ("5♣ 5♥", "2♠ 4♠", 100, "a 6 with a flush is not a plain 6: both"),
        ],
    )
    def test_banker_plain_0_or_6(self, player: str, banker: str, net: int, why: str) -> None:
        """A banker's plain 0 or 6 pays the ante only, unless the player wins "8 or 9 with a flush or a pair"."""
        assert settle("ante", player=player, banker=banker, stake=100).player_net == net, why

    @pytest.mark.parametrize(
        ("player", "banker", "net", "why"),
        [
            ("2♠ 3♦", "5♣ 5♥", -100, "banker wins with a special pair: ante and bet lost"),
            ("2♠ 3♦", "J♦ 8♦", -100, "banker wins with an 8 flush: both lost"),
            ("2♠ 3♦", "3♠ 4♦", -50, "banker wins with a plain 7: ante only"),
        ],
    )
    def test_banker_wins(self, player: str, banker: str, net: int, why: str) -> None:
        assert settle("ante", player=player, banker=banker, stake=100).player_net == net, why

    @pytest.mark.parametrize(
        ("cards", "special"),
        [("2♣ 9♣", True), ("7♦ 7♥", True), ("J♣ Q♦", True), ("10♦ K♣", True), ("2♠ 4♥", False), ("3♠ 5♥", False)],
    )
    def test_special_is_flush_pair_or_combination(self, cards: str, special: bool) -> None:
        assert ante_is_special(parse_cards(cards)) is special


# --------------------------------------------------------------------------------------------
# seeds 002 and 003: the ranked games (room and kingmaker), examples 1-6
# --------------------------------------------------------------------------------------------

# Concrete cards for each example: (banker, player, banker's name and total, player's).
EX1 = ("9♠ K♠", "4♥ 5♦")  # Pokdeng 9 (9 and K of spades) vs Pok 9
EX2 = ("3♥ 4♥ 5♥", "3♠ 4♦ 5♣")  # Straight Flush total 2 vs Straight total 2 (3-4-5 is the only run to 2)
EX3 = ("Q♥ K♦ A♠", "Q♣ K♥ A♦")  # Straight total 1, highest A♠ vs Straight total 1, highest A♦
EX4 = ("2♥ 3♥ 9♥", "2♣ 4♣ 9♣")  # Sam Deng total 4 vs Sam Deng total 5
EX5 = ("3♠ A♥", "6♦ 8♣")  # Taem 4 vs Taem 4
EX6 = ("2♣ 4♣ 9♣", "7♥ 8♦")  # Sam Deng total 5 vs Taem 5


class TestRankedExampleHands:
    @pytest.mark.parametrize("profile", ["room", "kingmaker"])
    @pytest.mark.parametrize(
        ("cards", "label", "points"),
        [
            (EX1[0], "pok deng", 9),
            (EX1[1], "pok", 9),
            (EX2[0], "straight flush", 2),
            (EX2[1], "straight", 2),
            (EX3[0], "straight", 1),
            (EX3[1], "straight", 1),
            (EX4[0], "sam deng", 4),
            (EX4[1], "sam deng", 5),
            (EX5[0], "taem", 4),
            (EX5[1], "taem", 4),
            (EX6[1], "taem", 5),
        ],
    )
    def test_the_constructed_hands_are_what_the_examples_name(
        self, profile: str, cards: str, label: str, points: int
    ) -> None:
        hand = value(profile, cards)
        assert (hand.label, hand.taem) == (label, points)


class TestSeed002Room:
    STAKE = 1000  # a $10 room

    @pytest.mark.parametrize(
        ("hands", "outcome", "gross", "net", "example"),
        [
            (EX1, TIE, 0, 0, "1: tied, both rank 1 and score the same"),
            (EX2, BW, 5000, -5000, "2: banker wins 5X, straight flush is higher than straight"),
            (EX3, BW, 3000, -3000, "3: banker wins 3X, Spade A beats Diamond A"),
            (EX4, PW, 3000, 2910, "4: player wins 3X, same rank, higher score (less 3% commission)"),
            (EX5, TIE, 0, 0, "5: same rank 6, same score: draw"),
            (EX6, TIE, 0, 0, "6: same rank 6, same score: draw, whatever the deng"),
        ],
    )
    def test_examples(self, hands: tuple[str, str], outcome: Outcome, gross: int, net: int, example: str) -> None:
        banker, player = hands
        result = settle("room", player=player, banker=banker, stake=self.STAKE)
        assert (result.outcome, result.gross, result.player_net) == (outcome, gross, net), example

    def test_rank_1_and_6_compare_score_only(self) -> None:
        """Seed: "Pok 8 vs Pok 8(2x), Taem - 7 vs Taem(3x) - 7" are ties."""
        assert settle("room", player="3♣ 5♦", banker="4♠ 4♥", stake=1000).outcome is TIE
        assert settle("room", player="3♣ 4♦", banker="2♠ 6♠ 9♠", stake=1000).outcome is TIE

    @pytest.mark.parametrize(
        ("cards", "multiplier"),
        [
            ("9♠ K♠", 2),  # rank 1 pok deng
            ("4♥ 5♦", 1),  # rank 1 pok
            ("7♠ 7♥ 7♣", 5),  # rank 2 tong
            ("3♥ 4♥ 5♥", 5),  # rank 3 straight flush
            ("3♠ 4♦ 5♣", 3),  # rank 4 straight
            ("Q♣ J♣ J♦", 3),  # rank 5 sam lueang
            ("2♥ 3♥ 9♥", 3),  # rank 6 sam deng
            ("2♥ 9♥", 2),  # rank 6 song deng
            ("2♥ 9♦", 1),  # rank 6 otherwise
        ],
    )
    def test_payout_of_each_rank(self, cards: str, multiplier: int) -> None:
        assert value("room", cards).multiplier == multiplier

    def test_higher_rank_wins_at_the_winners_multiplier(self) -> None:
        # pok (1x) beats a tong; a tong (5x) beats a straight flush; sam lueang (3x) beats a sam deng 9.
        assert settle("room", player="4♥ 5♦", banker="7♠ 7♥ 7♣", stake=1000).player_net == 970
        assert settle("room", player="7♠ 7♥ 7♣", banker="3♥ 4♥ 5♥", stake=1000).player_net == 5000 - 150
        assert settle("room", player="Q♣ J♣ J♦", banker="A♥ 3♥ 5♥", stake=1000).player_net == 3000 - 90

    def test_ranks_2_to_5_compare_the_highest_card_then_its_suit(self) -> None:
        # Tongs: the highest card's rank; sam lueang: only the highest card (not all ranks, as kingmaker).
        assert settle("room", player="2♠ 2♥ 2♦", banker="3♠ 3♥ 3♦", stake=1000).outcome is BW
        assert settle("room", player="K♠ J♣ J♦", banker="K♥ K♦ Q♠", stake=1000).outcome is PW

    @pytest.mark.parametrize(
        ("scenario", "player", "banker", "payout", "profit"),
        [
            # | Player won by 1x | $10 | $40 | $50 | $60 | ... | +$9.7 |
            ("won by 1x", "3♥ 4♣", "2♠ 3♦", 6000, 970),
            # | Player won by 2x | $10 | $40 | $50 | $70 | ... | +$19.4 |
            ("won by 2x", "4♣ 2♣", "2♠ 3♦", 7000, 1940),
            # | Player lost to 2x | $10 | $40 | $50 | $30 | ... | -$20 |
            ("lost to 2x", "2♠ 3♦", "4♣ 2♣", 3000, -2000),
            # | Player lost to 3x | $10 | $40 | $50 | $20 | ... | -$30 |
            ("lost to 3x", "2♠ 3♦", "3♥ 4♥ 9♥", 2000, -3000),
        ],
    )
    def test_wallet_table(self, scenario: str, player: str, banker: str, payout: int, profit: int) -> None:
        """The seed's "Bet Amount" is the stake plus its reservation: RULES.md's stake x 5 = $50.

        Payout = bet amount + gross winnings (commission taken after); profit = the player's net.
        """
        room = get_profile("room")
        bet_amount = self.STAKE * room.reserve_multiple
        assert bet_amount == 5000  # "$50": actual bet $10 + amount reserved $40
        result = settle(room, player=player, banker=banker, stake=self.STAKE)
        assert bet_amount + result.player_net + result.commission == payout, scenario
        assert result.player_net == profit, scenario

    def test_room_rules(self) -> None:
        room = get_profile("room")
        assert room.max_hands + 1 == 6  # "supports up to 6 players", banker included
        assert room.player_commission_rate == room.banker_commission_rate == Fraction(3, 100)
        # "Player(s) will draw a 3rd card if card score value falls under 0-3 ... 4-7 ... option".
        assert [room.player_draw.action(t) for t in range(10)] == ["draw"] * 4 + ["choose"] * 4 + ["stand"] * 2  # type: ignore[union-attr]
        # The banker draws at once on 0-3 and chooses otherwise (unless pok).
        assert [room.banker_draw.action(t) for t in range(8)] == ["draw"] * 4 + ["choose"] * 4  # type: ignore[union-attr]


class TestSeed003Kingmaker:
    STAKE = 1000

    @pytest.mark.parametrize(
        ("hands", "outcome", "net", "example"),
        [
            (EX1, TIE, 0, "1: Pok 9 (2X) against Pok 9: draw"),
            (EX2, BW, -5000, "2: banker's straight flush 5X"),
            (EX3, BW, -3000, "3: banker's Spade A beats the Diamond A, 3X"),
            (EX4, PW, 3000, "4: player's Taem(3x) 5 beats Taem(3x) 4, 3X (no commission)"),
            (EX5, TIE, 0, "5: Taem 4 against Taem 4: draw"),
            (EX6, TIE, 0, "6: Taem 5 3X against Taem 5: draw"),
        ],
    )
    def test_examples(self, hands: tuple[str, str], outcome: Outcome, net: int, example: str) -> None:
        banker, player = hands
        result = settle("kingmaker", player=player, banker=banker, stake=self.STAKE)
        assert (result.outcome, result.player_net) == (outcome, net), example

    @pytest.mark.parametrize(
        ("cards", "multiplier"),
        [
            ("9♠ K♠", Fraction(2)),  # Pokdeng 8 or 9: 2X
            ("4♥ 5♦", Fraction(95, 100)),  # Pok 8 or 9: 0.95X
            ("7♠ 7♥ 7♣", Fraction(5)),  # Tong 5X
            ("3♥ 4♥ 5♥", Fraction(5)),  # Straight Flush 5X
            ("3♠ 4♦ 5♣", Fraction(3)),  # Straight 3X
            ("Q♣ J♣ J♦", Fraction(3)),  # Sam Lueang 3X
            ("2♥ 3♥ 9♥", Fraction(3)),  # Sam Deng 3X
            ("2♥ 9♥", Fraction(2)),  # Song Deng 2X
            ("2♥ 9♦", Fraction(95, 100)),  # Taem 0.95X
        ],
    )
    def test_hand_rank_payouts(self, cards: str, multiplier: Fraction) -> None:
        assert value("kingmaker", cards).multiplier == multiplier

    def test_pokdeng_9_ties_pok_9_but_beats_pok_8(self) -> None:
        assert settle("kingmaker", player="9♠ K♠", banker="4♥ 5♦", stake=1000).outcome is TIE
        assert settle("kingmaker", player="9♠ K♠", banker="4♥ 4♦", stake=1000).player_net == 2000

    @pytest.mark.parametrize(
        "ordered",
        [
            # Tong: AAA > KKK > QQQ ... > 444 > 333 > 222
            ["A♠ A♥ A♦", "K♠ K♥ K♦", "Q♠ Q♥ Q♦", "4♠ 4♥ 4♦", "3♠ 3♥ 3♦", "2♠ 2♥ 2♦"],
            # Straight flush: AKQ > KQJ > ... > 432, then suit
            ["Q♠ K♠ A♠", "Q♥ K♥ A♥", "J♠ Q♠ K♠", "2♠ 3♠ 4♠", "2♦ 3♦ 4♦"],
            # Straight: AKQ > KQJ > ... > 432; the highest card's suit ♠ > ♥ > ♣ > ♦
            ["Q♥ K♦ A♠", "Q♠ K♣ A♥", "Q♥ K♦ A♣", "Q♠ K♣ A♦", "J♦ Q♦ K♠", "2♠ 3♦ 4♥"],
            # Sam lueang: KKQ > KKJ > KQQ > KJJ > QQJ > QJJ (no KQJ: that is a straight), then suit
            ["K♠ K♥ Q♦", "K♣ K♦ Q♠", "K♠ K♥ J♦", "K♦ Q♠ Q♥", "K♠ J♥ J♦", "Q♠ Q♥ J♦", "Q♣ J♠ J♥"],
        ],
    )
    def test_ordering_within_ranks_2_to_5(self, ordered: list[str]) -> None:
        kingmaker = get_profile("kingmaker")
        keys = [evaluate(kingmaker, parse_cards(cards)).key for cards in ordered]
        assert keys == sorted(keys, reverse=True) and len(set(keys)) == len(keys)

    def test_sam_lueang_by_ranks_differs_from_room(self) -> None:
        # K♠ J♣ J♦ against K♥ K♦ Q♠: room looks at the highest card only (K♠ wins);
        # kingmaker at the ranks high to low (K K Q beats K J J).
        assert settle("room", player="K♠ J♣ J♦", banker="K♥ K♦ Q♠", stake=1000).outcome is PW
        assert settle("kingmaker", player="K♠ J♣ J♦", banker="K♥ K♦ Q♠", stake=1000).player_net == -3000

    def test_a_2_3_is_not_a_straight(self) -> None:
        assert value("kingmaker", "A♠ 2♦ 3♣").kind is HandKind.NORMAL
        assert value("kingmaker", "K♠ A♦ 2♣").kind is HandKind.NORMAL

    @pytest.mark.parametrize(
        ("stake", "scenario", "player", "banker", "net", "returned"),
        [
            # | $10 | -$50 | Player lost, payout is 0.95X | $10 loss, $40 will be returned |
            (1000, "lost to 0.95X", "2♠ 3♦", "3♥ 4♣", -1000, 4000),
            # | $10 | -$50 | Player won, payout is 0.95X | $9.5 won, $59.5 will be returned |
            (1000, "won 0.95X", "3♥ 4♣", "2♠ 3♦", 950, 5950),
            # | $10 | -$50 | Player Tie with Banker | $0 won, $50 will be returned |
            (1000, "tie", "2♠ 3♦", "A♥ 4♣", 0, 5000),
            # | $50 | -$250 | Player lost, payout is 5X | $250 loss, $0 will be returned |
            (5000, "lost to 5X", "2♠ 3♦", "7♠ 7♥ 7♣", -25000, 0),
            # | $50 | -$250 | Player won, payout is 2x | $100 won, $350 will be returned |
            (5000, "won 2X", "4♣ 2♣", "2♠ 3♦", 10000, 35000),
        ],
    )
    def test_wallet_table(self, stake: int, scenario: str, player: str, banker: str, net: int, returned: int) -> None:
        kingmaker = get_profile("kingmaker")
        reserved = stake * kingmaker.reserve_multiple  # "-$50" for $10, "-$250" for $50
        result = settle(kingmaker, player=player, banker=banker, stake=stake)
        assert result.player_net == net, scenario
        assert reserved + result.player_net == returned, scenario

    @pytest.mark.parametrize(
        ("scenario", "player", "banker", "payout", "profit"),
        [
            ("won by 1x (0.95)", "3♥ 4♣", "2♠ 3♦", 5950, 950),  # $59.5, +$9.5
            ("won by 2x", "4♣ 2♣", "2♠ 3♦", 7000, 2000),  # $70, +$20
            ("lost to 2x", "2♠ 3♦", "4♣ 2♣", 3000, -2000),  # $30, -$20
            ("lost to 3x", "2♠ 3♦", "3♥ 4♥ 9♥", 2000, -3000),  # $20, -$30
        ],
    )
    def test_more_on_wallet_table(self, scenario: str, player: str, banker: str, payout: int, profit: int) -> None:
        result = settle("kingmaker", player=player, banker=banker, stake=1000)
        assert 5000 + result.player_net == payout, scenario
        assert result.player_net == profit, scenario

    @pytest.mark.parametrize(
        ("stake", "natural", "winnings", "profit"),
        [
            (1000, True, 2200, 1200),  # | $10 | $10 | won side bet, payout 1.2x | $22 | +$12 |
            (1000, False, 0, -1000),  # | $10 | $10 | lose side bet, payout 1x | $0 | -$10 |
            (5000, True, 11000, 6000),  # | $50 | $50 | won side bet, payout 1.2x | $110 | +$60 |
        ],
    )
    def test_side_bet_table(self, stake: int, natural: bool, winnings: int, profit: int) -> None:
        result = settle_side_bet(get_profile("kingmaker"), natural, stake)
        assert result.net == profit
        assert stake + result.net == winnings

    @pytest.mark.parametrize(
        ("banker", "natural"),
        [("8♠ K♦", True), ("9♥ 9♣", True), ("9♠ 8♦", False), ("8♣ 5♦", False)],
    )
    def test_side_bets_in_a_round(self, banker: str, natural: bool) -> None:
        """Pok 8 / Pok 9 (pok deng too) pays the side bet 1.2X; no natural: -1X."""
        round_ = settle_round("kingmaker", banker=banker, hands=[PlayerHand("2♠ 3♦", 1000, side_stake=1000)])
        (side,) = round_.side_bets
        assert side.net == (1200 if natural else -1000)
        assert round_.balance == 0

    def test_side_bet_needs_funds_beyond_the_reservation(self) -> None:
        """Seed: "Player(s) has only $290 and plays in a $50 table": $250 insurance + $50 side bet > $290."""
        stake = 5000
        needed = stake * get_profile("kingmaker").reserve_multiple + stake
        assert needed == 30000 > 29000

    def test_kingmaker_rules(self) -> None:
        kingmaker = get_profile("kingmaker")
        assert kingmaker.max_hands == 5 and kingmaker.side_bet is not None
        assert kingmaker.side_bet.up_card_points == (8, 9)
        # "Banker will automatically draw a 3rd card if card score value falls under 0-5", stands on 6-7.
        assert [kingmaker.banker_draw.action(t) for t in range(8)] == ["draw"] * 6 + ["stand"] * 2  # type: ignore[union-attr]
        assert [kingmaker.player_draw.action(t) for t in range(8)] == ["draw"] * 4 + ["choose"] * 4  # type: ignore[union-attr]
        assert kingmaker.player_commission_rate == 0
