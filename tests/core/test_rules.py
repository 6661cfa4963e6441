"""RULES.md section 4, "Worked checks": every row, through the public call ``pokdeng_core.settle``.

Each row of the table is one golden case. Where a row names a multiplier instead of hands
("room: win at 1x"), the case picks concrete hands that produce it and says which. The rows
are followed by the section-2/3 rules they rest on (rounding, reservation, the kingmaker
side bet through ``settle_round`` and ``settle_side_bet``).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import pytest

import pokdeng_core
from pokdeng_core import (
    Outcome,
    PlayerHand,
    get_profile,
    settle,
    settle_round,
    settle_side_bet,
)


@dataclass(frozen=True)
class Row:
    """One row of RULES.md section 4, with the hands chosen where the row gives none."""

    profile: str
    player: str
    banker: str
    stake: int
    player_net: int
    outcome: Outcome
    multiplier: Fraction | None = None  # None: not meaningful (ante: see ante_net/bet_net)
    commission: int = 0
    why: str = ""


PW, BW, TIE = Outcome.PLAYER_WINS, Outcome.BANKER_WINS, Outcome.TIE

ROWS = [
    # | classic | 9♠ 9♦ | A♣ 4♣ 4♦ | +200 |: pok deng (taem 8, deng 2) beats a normal 9 by type, paid its deng.
    Row("classic", "9♠ 9♦", "A♣ 4♣ 4♦", 100, 200, PW, Fraction(2), why="pok beats normal, pok deng pays 2"),
    # | classic | 5♠ 4♣ | 9♠ 9♦ | +100 |: pok 9 (deng 1) beats pok deng 8 on taem, paid its own deng 1.
    Row("classic", "5♠ 4♣", "9♠ 9♦", 100, 100, PW, Fraction(1), why="pok 9 beats pok 8 on taem"),
    # | classic | 6♣ 4♣ 5♣ | K♥ 2♠ A♣ | +300 |: sam deng 5 beats 3 on taem, paid 3.
    Row("classic", "6♣ 4♣ 5♣", "K♥ 2♠ A♣", 100, 300, PW, Fraction(3), why="taem decides, winner's deng 3"),
    # | classic | 6♣ 4♣ 5♣ | K♥ 2♠ 3♣ | +200 |: taem 5 each, deng 3 against 1: the difference.
    Row("classic", "6♣ 4♣ 5♣", "K♥ 2♠ 3♣", 100, 200, PW, Fraction(2), why="deng decides: 3 - 1"),
    # | classic | 6♣ 4♣ 5♣ | 2♠ 3♠ | +100 |: taem 5 each, deng 3 against song deng 2: the difference.
    Row("classic", "6♣ 4♣ 5♣", "2♠ 3♠", 100, 100, PW, Fraction(1), why="deng decides: 3 - 2"),
    # | classic | 7♠ 7♥ 7♣ | Q♣ J♣ J♦ | +200 |: tong against sam lueang pays 2 (not 5).
    Row("classic", "7♠ 7♥ 7♣", "Q♣ J♣ J♦", 100, 200, PW, Fraction(2), why="tong vs sam lueang pays 2"),
    # | ante (wager 100) | 7♥ 6♣ | 5♦ 6♠ | +50 |: 3 beats 1, no special hand: ante only.
    Row("ante", "7♥ 6♣", "5♦ 6♠", 100, 50, PW, why="plain win: ante only"),
    # | ante (wager 100) | J♣ 7♥ | 3♠ 4♦ | 0 |: 7 against 7: tie, both returned.
    Row("ante", "J♣ 7♥", "3♠ 4♦", 100, 0, TIE, why="equal values tie"),
    # | ante (wager 100) | 5♣ 5♥ | A♠ 3♦ | +100 |: special pair (7.4) beats 4: ante and bet.
    Row("ante", "5♣ 5♥", "A♠ 3♦", 100, 100, PW, why="special hand wins: ante and bet"),
    # | ante (wager 100) | 10♦ J♣ | 2♠ 4♥ | +50 |: 10 and face (7.2) beats a plain 6: ante only.
    Row("ante", "10♦ J♣", "2♠ 4♥", 100, 50, PW, why="banker plain 6: ante only"),
    # | ante (wager 100) | J♦ 8♦ | 4♣ 6♥ | +100 |: 8 with a flush beats a plain 0: ante and bet.
    Row("ante", "J♦ 8♦", "4♣ 6♥", 100, 100, PW, why="8 with a flush beats plain 0: both paid"),
    # | room (stake 1000) | win at 1× | | +970 |: chosen hands: a plain pok 9 (9♥ K♣, paid 1×)
    # against a plain 5; gross 1000, commission ceil(3% of 1000) = 30.
    Row("room", "9♥ K♣", "2♠ 3♦", 1000, 970, PW, Fraction(1), 30, why="win at 1x (pok 9)"),
    # ... and a plain taem 7 (3♥ 4♣, paid 1×) against a plain 5: the same +970.
    Row("room", "3♥ 4♣", "2♠ 3♦", 1000, 970, PW, Fraction(1), 30, why="win at 1x (taem 7)"),
    # | room (stake 1000) | win at 2× | | +1940 |: chosen: song deng 6 (4♣ 2♣, one suit, 2×)
    # against a plain 5; gross 2000, commission 60.
    Row("room", "4♣ 2♣", "2♠ 3♦", 1000, 1940, PW, Fraction(2), 60, why="win at 2x (song deng)"),
    # ... and pok deng 9 (9♠ K♠, 2×) against a plain 5.
    Row("room", "9♠ K♠", "2♥ 3♦", 1000, 1940, PW, Fraction(2), 60, why="win at 2x (pok deng)"),
    # | kingmaker (stake 1000) | win at 0.95× | | +950 |: chosen: plain taem 7 (3♥ 4♣, 0.95×) against 5.
    Row("kingmaker", "3♥ 4♣", "2♠ 3♦", 1000, 950, PW, Fraction(19, 20), why="win at 0.95x (taem)"),
    # ... and a plain pok 8 (5♥ 3♣, 0.95×) against a straight 2♠ 3♦ 4♥ (rank 1 beats rank 4).
    Row("kingmaker", "5♥ 3♣", "2♠ 3♦ 4♥", 1000, 950, PW, Fraction(19, 20), why="win at 0.95x (pok)"),
    # | kingmaker (stake 1000) | lose to a 0.95× hand | | −1000 |: chosen: plain taem 5 (2♠ 3♦)
    # against the banker's plain taem 7 (3♥ 4♣, 0.95×): the loser pays max(1, 0.95) = 1×.
    Row("kingmaker", "2♠ 3♦", "3♥ 4♣", 1000, -1000, BW, Fraction(1), why="lose to 0.95x (taem): whole stake"),
    # ... and against a banker's plain pok 8 (5♥ 3♣).
    Row("kingmaker", "2♠ 3♦", "5♥ 3♣", 1000, -1000, BW, Fraction(1), why="lose to 0.95x (pok): whole stake"),
]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r.profile}: {r.player} vs {r.banker} ({r.why})")
def test_worked_check(row: Row) -> None:
    result = settle(row.profile, player=row.player, banker=row.banker, stake=row.stake)
    assert result.player_net == row.player_net
    assert result.outcome is row.outcome
    if row.multiplier is not None:
        assert result.multiplier == row.multiplier
    assert result.commission == row.commission
    # A single stake balances: the banker's side is the player's gross, the operator keeps the commission.
    assert result.player_net + result.banker_net + result.commission == 0
    assert result.stake == row.stake


@pytest.mark.parametrize(
    ("player", "banker", "ante_net", "bet_net"),
    [
        ("7♥ 6♣", "5♦ 6♠", 50, 0),  # ante paid, bet returned (no special hand)
        ("J♣ 7♥", "3♠ 4♦", 0, 0),  # tie: both returned
        ("5♣ 5♥", "A♠ 3♦", 50, 50),  # special pair: both paid
        ("10♦ J♣", "2♠ 4♥", 50, 0),  # banker plain 6: only the ante
        ("J♦ 8♦", "4♣ 6♥", 50, 50),  # 8 with a flush beats even a plain 0: both
    ],
)
def test_ante_rows_split_the_wager_into_ante_and_bet(player: str, banker: str, ante_net: int, bet_net: int) -> None:
    """RULES.md section 3, ante: each wager is half ante, half bet (the wager 100 of section 4)."""
    result = settle("ante", player=player, banker=banker, stake=100)
    assert (result.ante_net, result.bet_net) == (ante_net, bet_net)
    assert result.player_net == ante_net + bet_net


def test_settle_is_the_package_entry_point() -> None:
    """The call the rows go through is the package's public ``settle`` (the docstring's examples)."""
    assert pokdeng_core.settle is settle
    assert settle("classic", player="9S 9D", banker="AC 4C 4D", stake=100).player_net == 200
    assert settle(get_profile("ante"), player="5C 5H", banker="AS 3D", stake=100).player_net == 100


class TestKingmakerSideBetRow:
    """| kingmaker side bet (1000) | banker natural | | +1200 |"""

    def test_through_settle_round_with_a_banker_natural(self) -> None:
        # The banker's up card 9♠ opens the side bets; 9♠ K♦ is a natural (pok 9, 0.95x).
        # The player's main hand, pok 8 (5♥ 3♣), loses to it: -1000; the side bet wins +1200.
        round_ = settle_round(
            "kingmaker",
            banker="9♠ K♦",
            hands=[PlayerHand("5♥ 3♣", 1000, side_stake=1000)],
        )
        (side,) = round_.side_bets
        assert (side.won, side.stake, side.gross, side.net) == (True, 1000, 1200, 1200)
        (main,) = round_.stakes
        assert main.player_net == -1000
        assert round_.player_nets == (-1000 + 1200,)
        assert round_.banker_net == 1000 - 1200  # the house pays the side bet, wins the main stake
        assert round_.house_net == round_.banker_net
        assert round_.commission == 0
        assert round_.balance == 0

    def test_side_bet_row_alone(self) -> None:
        # A main hand that ties the banker isolates the side bet: pok 9 against pok 9.
        round_ = settle_round("kingmaker", banker="8♠ A♦", hands=[PlayerHand("4♥ 5♣", 1000, side_stake=1000)])
        assert round_.stakes[0].outcome is Outcome.TIE
        assert round_.player_nets == (1200,)
        assert round_.balance == 0

    def test_through_settle_side_bet(self) -> None:
        kingmaker = get_profile("kingmaker")
        won = settle_side_bet(kingmaker, True, 1000)
        assert (won.won, won.gross, won.net) == (True, 1200, 1200)
        lost = settle_side_bet(kingmaker, False, 1000)
        assert (lost.won, lost.net) == (False, -1000)


class TestMoneyRules:
    """RULES.md section 2, as the rows use it."""

    def test_room_commission_is_rounded_up_and_kept_by_the_house(self) -> None:
        # 3% of 1001 is 30.03: the commission is 31, the player nets 970.
        result = settle("room", player="9♥ K♣", banker="2♠ 3♦", stake=1001)
        assert (result.gross, result.commission, result.player_net) == (1001, 31, 970)

    def test_kingmaker_fraction_is_floored(self) -> None:
        # 0.95 of 1001 is 950.95: the player gets 950.
        result = settle("kingmaker", player="3♥ 4♣", banker="2♠ 3♦", stake=1001)
        assert result.player_net == 950

    def test_room_banker_pays_commission_on_its_net_gain_only(self) -> None:
        # The banker's 7 (3♥ 4♣) beats two plain 5s: it gains 2000 and pays ceil(3% of 2000) = 60.
        won = settle_round("room", banker="3♥ 4♣", hands=[("2♠ 3♦", 1000), ("A♠ 4♦", 1000)], banker_is_house=False)
        assert won.player_nets == (-1000, -1000)
        assert (won.banker_net_before_commission, won.banker_commission, won.banker_net) == (2000, 60, 1940)
        assert won.commission == 60 and won.balance == 0 and won.house_net == 0
        # The doctest round: the banker loses 3000, pays nothing; the players pay 30 and 60.
        lost = settle_round("room", banker="2S 3D", hands=[("9H KC", 1000), ("4C 2C", 1000)])
        assert lost.player_nets == (970, 1940)
        assert (lost.banker_commission, lost.banker_net, lost.commission) == (0, -3000, 90)
        assert lost.balance == 0

    @pytest.mark.parametrize("name", ["classic", "room", "kingmaker"])
    def test_reservation_is_stake_times_five(self, name: str) -> None:
        """A player reserves stake x 5: what a tong or a straight flush takes from it."""
        profile = get_profile(name)
        assert profile.reserve_multiple == 5
        worst = settle(name, player="2♠ 3♦", banker="7♠ 7♥ 7♣", stake=1000)
        assert worst.player_net == -5000 == -1000 * profile.reserve_multiple

    def test_ante_reserves_the_whole_wager(self) -> None:
        assert get_profile("ante").reserve_multiple == 1
        assert settle("ante", player="2♠ 3♦", banker="5♣ 5♥", stake=100).player_net == -100
