"""Whole rounds of every profile, end to end through the application, on SQLite and PostgreSQL.

After every round: the round's own books balance (wallet nets + house_net + commission == 0),
the wallets' balance changes plus the table's house_net and commission changes add up to
zero, and nothing stays reserved.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from typing import Any, TypeVar

import pytest

from pokdeng_core.errors import DomainError, InsufficientFunds, InvalidCommand, NotYourTurn, WrongPhase
from pokdeng_core.round_state import BANKER, Phase
from pokdeng_service import audit
from pokdeng_service.application import PokdengApp
from pokdeng_service.application.errors import BankerCannotCover, DuplicateRequest
from pokdeng_service.store.aggregates import table_uuid

from . import play
from .play import Chooser, Driver, Ledger, events_of, kinds

STAKE = 100


E = TypeVar("E", bound=Exception)


def _no_write(app: PokdengApp, error: type[E], call: Callable[..., Any], *args: Any, **kwargs: Any) -> E:
    before = app.max_position
    with pytest.raises(error) as caught:
        call(*args, **kwargs)
    assert app.max_position == before, "a refused command wrote events"
    return caught.value


def _all_cards_distinct(view) -> None:  # type: ignore[no-untyped-def]
    cards = [card for hand in view.hands for card in hand.cards]
    assert len(cards) == len(set(cards)), cards


# --- classic ----------------------------------------------------------------------------------


def test_classic_two_seats_one_player_and_a_backer(driver: Driver, app: PokdengApp) -> None:
    """Alice holds seats 1 and 2, Bob seat 3; Carol backs Bob's hand. The house deals."""
    wallets = ["alice", "bob", "carol"]
    play.open_wallets(driver, wallets)
    play.open_table(driver, "c1", "classic", [(1, "alice"), (2, "alice"), (3, "bob")], seats=6)
    for _ in range(3):
        ledger = Ledger.take(app, wallets, ["c1"])
        round_id = play.start_round(driver, "c1", "classic backer")
        play.place_bets(driver, round_id, [(1, "alice", 100), (2, "alice", 200), (3, "bob", 300), (3, "carol", 150)])
        assert app.get_wallet("alice").reserved == 5 * 300
        assert app.get_wallet("carol").reserved == 5 * 150
        # Carol is not the holder of seat 3: she cannot make its decisions.
        while app.round_state(round_id).phase is not Phase.CLOSED:
            state = app.round_state(round_id)
            if state.turn == 3:
                _no_write(app, NotYourTurn, app.draw, driver.next_id(), round_id, 3, "carol")
                _no_write(app, NotYourTurn, app.stay, driver.next_id(), round_id, 3, "carol")
            play.step(driver, round_id)
        view = app.get_round(round_id)
        _all_cards_distinct(view)
        assert {h.seat for h in view.hands} == {0, 1, 2, 3}
        settled = events_of(view, "bet_settled")
        assert Counter(s["seat"] for s in settled) == {1: 1, 2: 1, 3: 2}
        bob, carol = (next(s for s in settled if s["seat"] == 3 and s["player"] == p) for p in ("bob", "carol"))
        for key in ("outcome", "multiplier", "hand"):
            assert bob[key] == carol[key]
        assert Fraction(bob["net"], 300) == Fraction(carol["net"], 150)
        nets = play.assert_round_books(view)
        (round_settled,) = events_of(view, "round_settled")
        assert sorted(p for p, _r, _n in round_settled["wallets"]) == ["alice", "bob", "carol"]
        changes, house, commission = ledger.assert_balanced(app)
        assert changes == {w: nets.get(w, 0) for w in wallets}
        assert commission == 0 and house == -sum(changes.values())
        assert app.get_table("c1").current_round is None


def test_classic_player_dealer(app: PokdengApp) -> None:
    """Dana deals: her wallet backs every stake, she makes the banker's choices, and the house books nothing."""
    driver = Driver(app, chooser=Chooser(random.Random(7), reveal=1.0))
    wallets = ["dana", "p1", "p2", "p3"]
    play.open_wallets(driver, wallets)
    play.open_table(driver, "cd", "classic", [(1, "p1"), (2, "p2"), (3, "p3")], dealer="dana")
    _no_write(app, Exception, app.take_seat, driver.next_id(), "cd", "dana", 4)
    reveals = banker_turns = 0
    for n in range(12):
        ledger = Ledger.take(app, wallets, ["cd"])
        round_id = play.start_round(driver, "cd")
        assert app.round_state(round_id).banker_player == "dana"
        play.seat_bets(driver, round_id, 200)
        _no_write(app, DomainError, app.place_bet, driver.next_id(), round_id, 1, "dana", 100)
        assert app.get_wallet("dana").reserved == 5 * 600
        while app.round_state(round_id).phase is not Phase.CLOSED:
            state = app.round_state(round_id)
            if state.phase is Phase.BANKER_TURN and app.legal_commands(round_id, BANKER):
                banker_turns += 1
                # the house (player None) or a player may not act for Dana
                _no_write(app, NotYourTurn, app.banker_stay, driver.next_id(), round_id, None)
                _no_write(app, NotYourTurn, app.banker_draw, driver.next_id(), round_id, "p1")
            result = play.step(driver, round_id)
            if driver.log[-1].command == "banker_reveal":
                reveals += 1
                assert kinds(result)[0] == "hands_revealed" and result.events[0].data["selective"] is True
        view = app.get_round(round_id)
        nets = play.assert_round_books(view)
        changes, house, commission = ledger.assert_balanced(app)
        assert (house, commission) == (0, 0)
        assert changes == {w: nets.get(w, 0) for w in wallets}
        assert changes["dana"] == -sum(changes[p] for p in ("p1", "p2", "p3"))
        if banker_turns and reveals and n >= 2:
            break
    assert banker_turns and reveals, "twelve rounds without a banker's choice and reveal"
    table = app.get_table("cd")
    assert (table.house_net, table.commission, table.dealer) == (0, 0, "dana")


# --- ante -------------------------------------------------------------------------------------


def test_ante_several_wallets_on_several_positions(driver: Driver, app: PokdengApp) -> None:
    wallets = ["w1", "w2", "w3"]
    play.open_wallets(driver, wallets)
    play.open_table(driver, "a1", "ante", min_stake=100, max_stake=1000)
    assert app.get_table("a1").seat_count == 5
    for _ in range(4):
        ledger = Ledger.take(app, wallets, ["a1"])
        round_id = play.start_round(driver, "a1")
        bets = [(1, "w1", 200), (2, "w1", 400), (2, "w2", 200), (3, "w2", 1000), (5, "w3", 100)]
        play.place_bets(driver, round_id, bets)
        _no_write(app, InvalidCommand, app.place_bet, driver.next_id(), round_id, 4, "w3", 101)  # odd wager
        _no_write(app, InvalidCommand, app.place_bet, driver.next_id(), round_id, 4, "w3", 1002)  # above the limit
        assert app.get_wallet("w1").reserved == 600  # ante reserves the whole wager
        assert app.get_wallet("w2").reserved == 1200
        result = driver.call("deal", round_id)  # no draws: the deal settles and closes the round
        assert kinds(result)[-1] == "round_closed"
        view = app.get_round(round_id)
        (dealt,) = events_of(view, "cards_dealt")
        assert [seat for seat, _ in dealt["cards"]] == [1, 2, 3, 4, 5, 0] * 2
        settled = events_of(view, "bet_settled")
        assert sorted((s["seat"], s["player"], s["stake"]) for s in settled) == sorted(bets)
        for s in settled:
            assert s["ante_net"] + s["bet_net"] == s["net"]
            assert -s["stake"] <= s["net"] <= s["stake"]
        on_two = [s for s in settled if s["seat"] == 2]
        assert on_two[0]["outcome"] == on_two[1]["outcome"]
        assert Fraction(on_two[0]["net"], on_two[0]["stake"]) == Fraction(on_two[1]["net"], on_two[1]["stake"])
        nets = play.assert_round_books(view)
        changes, _house, commission = ledger.assert_balanced(app)
        assert changes == {w: nets.get(w, 0) for w in wallets} and commission == 0


# --- room -------------------------------------------------------------------------------------


def test_room_banker_bid_and_selective_reveal(app: PokdengApp) -> None:
    driver = Driver(app, chooser=Chooser(random.Random(11), reveal=1.0))
    wallets = ["r1", "r2", "r3", "r4"]
    play.open_wallets(driver, ["r1", "r2", "r3"], 100_000)
    play.open_wallets(driver, ["r4"], 200_000)
    play.open_table(driver, "room", "room", [(1, "r1"), (2, "r2"), (3, "r3"), (4, "r4")], max_stake=1000)
    _no_write(app, WrongPhase, app.start_round, driver.next_id(), "room")  # no banker yet
    # r1 and r4 both bid 10 rounds: the tie goes to the larger wallet (r4).
    banker = play.hold_banker_bid(driver, "room", [("r1", 10), ("r2", 5), ("r3", 0), ("r4", 10)])
    assert banker == "r4"
    table = app.get_table("room")
    assert table.banker_rounds_left == 10 and "r4" not in [s.player for s in table.seats]
    reveals = 0
    for n in range(30):
        if app.get_table("room").banker is None:  # tenure served: r4 sits down and bids again
            driver.call("take_seat", "room", "r4", 4)
            play.hold_banker_bid(driver, "room", [("r4", 5)])
        ledger = Ledger.take(app, wallets, ["room"])
        round_id = play.start_round(driver, "room")
        play.seat_bets(driver, round_id, 500)
        assert app.get_wallet("r4").reserved == 5 * 500 * 3
        events_before_banker = None
        while app.round_state(round_id).phase is not Phase.CLOSED:
            state = app.round_state(round_id)
            if state.phase is Phase.BANKER_TURN and "banker_reveal" in app.legal_commands(round_id, BANKER):
                _no_write(app, NotYourTurn, app.banker_reveal, driver.next_id(), round_id, [1], "r1")
            play.step(driver, round_id)
            if driver.log[-1].command == "banker_reveal":
                reveals += 1
                events_before_banker = driver.log[-1].result
        view = app.get_round(round_id)
        if events_before_banker is not None:
            revealed = events_before_banker.events[0].data
            assert revealed["selective"] is True and 0 < len(revealed["seats"]) < 3
            # the chosen hands settle against the banker's two cards, before any banker draw
            banker_two = [card for seat, cards in revealed["hands"] if seat == 0 for card in cards]
            assert len(banker_two) == 2
            names = kinds(view)
            first_settle = names.index("bet_settled")
            banker_moves = [
                i for i, e in enumerate(view.events) if e.kind in ("card_drawn", "player_stood") and e.data["seat"] == 0
            ]
            assert all(first_settle < i for i in banker_moves)
        settled = events_of(view, "bet_settled")
        for s in settled:  # 3% commission on each winning player's gross, rounded up
            if s["outcome"] == "player_wins":
                assert s["commission"] == -(-s["gross"] * 3 // 100) and s["net"] == s["gross"] - s["commission"]
            else:
                assert s["commission"] == 0
        nets = play.assert_round_books(view)
        changes, house, commission = ledger.assert_balanced(app)
        assert house == 0 and commission >= 0
        assert changes == {w: nets.get(w, 0) for w in wallets}
        (round_settled,) = events_of(view, "round_settled")
        owed = round_settled["banker_commission"]
        banker_gross = round_settled["banker_net_before_commission"]
        assert owed == (-(-banker_gross * 3 // 100) if banker_gross > 0 else 0)
        if reveals and n >= 1:
            break
    assert reveals, "thirty room rounds without a banker's choice"


def test_room_stakes_the_banker_cannot_cover_and_poor_players(driver: Driver, app: PokdengApp) -> None:
    play.open_wallets(driver, ["b"], 4_000)  # exactly the bid's minimum: 1000 x 4 players
    play.open_wallets(driver, ["x", "y"], 100_000)
    play.open_wallets(driver, ["poor"], 4_999)  # cannot cover room stake x 5
    play.open_table(driver, "rm", "room", [(1, "b"), (2, "x"), (3, "y"), (4, "poor")], max_stake=1000)
    play.hold_banker_bid(driver, "rm", [("b", 5)])
    round_id = play.start_round(driver, "rm")
    table = app.get_table("rm")
    assert [s.player for s in table.seats] == ["x", "y"]  # poor was unseated at the start
    assert app.round_state(round_id).seats == ((2, "x"), (3, "y"))
    driver.call("place_bet", round_id, 2, "x", 500)  # the banker reserves 2500 of its 4000
    error = _no_write(app, InsufficientFunds, app.place_bet, driver.next_id(), round_id, 3, "y", 500)
    assert error.wallet == "b" and error.required == 2500 and error.available == 1500
    driver.call("place_bet", round_id, 3, "y", 300)  # 1500: exactly what is left
    assert app.get_wallet("b").available == 0
    ledger = Ledger.take(app, ["b", "x", "y"], ["rm"])
    play.drive_round(driver, round_id)
    ledger.assert_balanced(app)


# --- kingmaker --------------------------------------------------------------------------------


def test_kingmaker_side_bet(app: PokdengApp) -> None:
    driver = Driver(app, chooser=Chooser(random.Random(3), side_bet=1.0))
    wallets = ["k1", "k2", "k3"]
    play.open_wallets(driver, wallets)
    play.open_table(driver, "km", "kingmaker", [(1, "k1"), (2, "k2"), (3, "k3")], max_stake=1000)
    stake = 1000
    for _ in range(80):
        # k3 can cover its main stake (x5) but not a side bet on top of it
        available = app.get_wallet("k3").available
        want = 6 * stake - 1
        if available < want:
            driver.call("deposit", "k3", want - available)
        elif available > want:
            driver.call("withdraw", "k3", available - want)
        ledger = Ledger.take(app, wallets, ["km"])
        round_id = play.start_round(driver, "km")
        play.seat_bets(driver, round_id, stake)
        result = driver.call("deal", round_id)
        dealt = result.events[1]  # (after the client_seed_fixed the deal records before the first card)
        up = dealt.data["banker_up_card"]
        assert up == dealt.data["cards"][3][1]  # the banker's first card, after three players
        if app.round_state(round_id).phase is not Phase.SIDE_BETS:
            assert up[:-1] not in ("8", "9")  # the window opens on every 8 or 9 up card
            play.drive_round(driver, round_id)
            ledger.assert_balanced(app)
            continue
        assert up[:-1] in ("8", "9")
        assert "side_bet_window_opened" in kinds(result)
        error = _no_write(app, InsufficientFunds, app.place_side_bet, driver.next_id(), round_id, 3, "k3")
        assert error.required == stake and error.available == stake - 1
        _no_write(app, NotYourTurn, app.place_side_bet, driver.next_id(), round_id, 1, "k2")
        for seat, player in ((1, "k1"), (2, "k2")):
            driver.call("place_side_bet", round_id, seat, player)
            assert app.get_wallet(player).reserved == 6 * stake
        _no_write(app, Exception, app.place_side_bet, driver.next_id(), round_id, 1, "k1")  # only one side bet
        closed = driver.call("close_side_bets", round_id)
        (outcome,) = [e.data for e in closed.events if e.kind == "side_bets_settled"]
        expected = 1200 if outcome["natural"] else -1000
        assert [(seat, net) for seat, _p, _s, net in outcome["results"]] == [(1, expected), (2, expected)]
        if outcome["natural"]:
            assert app.round_state(round_id).phase is Phase.CLOSED
        view = play.drive_round(driver, round_id)
        nets = play.assert_round_books(view)
        changes, _house, commission = ledger.assert_balanced(app)
        assert changes == {w: nets.get(w, 0) for w in wallets} and commission == 0
        return
    pytest.fail("eighty kingmaker rounds without an 8 or 9 up card")


# --- timeouts and the room banker's role --------------------------------------------------------


def test_turn_timeouts_take_the_automatic_action(app: PokdengApp) -> None:
    """A timed-out turn is recorded, then the automatic action: draw on taem 0-3, otherwise stay."""
    driver = Driver(app, chooser=Chooser(random.Random(9), timeout=1.0))
    wallets = ["t1", "t2", "t3", "dealer"]
    play.open_wallets(driver, wallets)
    play.open_table(driver, "to", "classic", [(1, "t1"), (2, "t2"), (3, "t3")], dealer="dealer")
    seen: Counter[str] = Counter()
    for _ in range(10):
        ledger = Ledger.take(app, wallets, ["to"])
        round_id = play.start_round(driver, "to")
        play.seat_bets(driver, round_id, 100)
        driver.call("deal", round_id)
        while app.round_state(round_id).phase is not Phase.CLOSED:
            state = app.round_state(round_id)
            seat = state.turn if state.phase is Phase.PLAYER_TURNS else BANKER
            assert seat is not None
            taem = _taem(state.cards(seat))
            result = play.step(driver, round_id)
            assert driver.log[-1].command == "time_out_turn"
            timed_out, action = result.events[0], result.events[1]
            assert timed_out.kind == "turn_timed_out" and timed_out.data["seat"] == seat
            expected = "draw" if taem <= 3 else "stay"
            assert timed_out.data["action"] == expected
            assert action.kind == ("card_drawn" if expected == "draw" else "player_stood")
            assert action.data["seat"] == seat and action.data["reason"] == "timeout"
            seen[expected] += 1
        play.assert_round_books(app.get_round(round_id))
        ledger.assert_balanced(app)
        if seen["draw"] and seen["stay"]:
            return
    pytest.fail(f"ten rounds of timeouts without both actions: {seen}")


def _taem(cards) -> int:  # type: ignore[no-untyped-def]
    from pokdeng_core.hands import taem

    return taem(cards)


def test_room_banker_role_ends_when_its_wallet_cannot_cover_another_round(driver: Driver, app: PokdengApp) -> None:
    play.open_wallets(driver, ["bk"], 20_000)
    play.open_wallets(driver, ["x", "y"], 100_000)
    play.open_table(driver, "rb", "room", [(1, "bk"), (2, "x"), (3, "y")], max_stake=1000)
    play.hold_banker_bid(driver, "rb", [("bk", 10)])
    for n in range(2):
        round_id = play.start_round(driver, "rb")
        play.seat_bets(driver, round_id, 100)
        if n == 1:  # mid-round the banker takes out everything it has not reserved
            driver.call("withdraw", "bk", app.get_wallet("bk").available)
        before = app.get_table("rb").banker_rounds_left
        result = play.drive_round(driver, round_id)
        assert result.phase == "closed"
        table = app.get_table("rb")
        if n == 0:
            assert table.banker == "bk" and table.banker_rounds_left == before - 1
    table = app.get_table("rb")
    assert table.banker is None and table.banker_rounds_left == 0
    table_events = [n for n in app.read_notifications(0, 10_000) if n.stream == "table" and n.stream_id == "rb"]
    ended = [n.data for n in table_events if n.kind == "banker_role_ended"]
    assert ended == [{"player": "bk", "reason": "insufficient_funds"}]


def test_room_banker_role_ends_when_a_round_opens_that_its_wallet_cannot_cover(driver: Driver, app: PokdengApp) -> None:
    """Players who sat down since the last round end raise the banker's minimum: when the next round opens the
    banker's funds are checked against it, the role ends (recorded as the service's own request) and no round
    opens; the store still verifies, and the client's request id stays unused for its retry."""
    play.open_wallets(driver, ["bk"], 3_000)  # three seated at the bid: 3000 may bid
    play.open_wallets(driver, ["x", "y", "z"], 100_000)
    play.open_table(driver, "ro", "room", [(1, "bk"), (2, "x"), (3, "y")], max_stake=1000)
    play.hold_banker_bid(driver, "ro", [("bk", 10)])
    round_id = play.start_round(driver, "ro")  # two seated: the banker needs 2000
    play.seat_bets(driver, round_id, 100)
    assert play.drive_round(driver, round_id).phase == "closed"
    available = app.get_wallet("bk").available  # what the round left depends on its cards
    if available > 2_500:
        driver.call("withdraw", "bk", available - 2_500)  # 2500 covers two, not three
    elif available < 2_500:
        driver.call("deposit", "bk", 2_500 - available)
    assert app.get_table("ro").banker == "bk"
    driver.call("take_seat", "ro", "z", 4)  # three seated now: 3000
    version = app.get_table("ro").version
    with pytest.raises(BankerCannotCover, match="'bk' cannot cover round ro#2") as first:
        app.start_round("open-2", "ro", "")
    assert first.value.details == {"table_id": "ro", "banker": "bk"}
    table = app.get_table("ro")
    assert table.banker is None and table.banker_rounds_left == 0 and table.round_no == 1
    position = app.max_position
    with pytest.raises(WrongPhase, match="no banker"):  # the request id is still unused: it decides afresh
        app.start_round("open-2", "ro", "")
    assert app.max_position == position
    ended = [e for e in app.stream_events(table_uuid("ro")) if e.kind == "banker_role_ended"]
    assert [e.data for e in ended] == [{"player": "bk", "reason": "insufficient_funds"}]
    assert ended[0].command_id == f"start-refused:ro@{version}"  # the service's own request
    assert app.get_wallet("bk").available == 2_500 and app.get_wallet("bk").reserved == 0
    failed = [v.render() for v in audit.verify_store(app) if not v.ok]
    assert not failed, failed
    play.hold_banker_bid(driver, "ro", [("x", 5)])
    assert app.start_round("open-2", "ro", "").id == "ro#2"  # the same request, now that the room has a banker


def test_a_room_start_that_unseats_every_player_records_it_and_starts_nothing(driver: Driver, app: PokdengApp) -> None:
    play.open_wallets(driver, ["bk"], 100_000)
    play.open_wallets(driver, ["x", "y"], 10_000)
    play.open_table(driver, "ru", "room", [(1, "bk"), (2, "x"), (3, "y")], max_stake=1000)
    play.hold_banker_bid(driver, "ru", [("bk", 10)])
    for player in ("x", "y"):
        driver.call("withdraw", player, 5_001)  # 4999 left: a room seat needs 1000 x 5
    with pytest.raises(DomainError, match="'x', 'y' could not cover 5000") as first:
        app.start_round("open-u", "ru", "")
    assert type(first.value) is DomainError and first.value.code == "rule_violation"
    table = app.get_table("ru")
    assert table.seats == () and table.banker == "bk" and table.round_no == 0
    left = [e for e in app.stream_events(table_uuid("ru")) if e.kind == "player_left"][-2:]
    assert [e.data["reason"] for e in left] == ["insufficient_funds"] * 2
    assert {e.command_id for e in left} == {f"start-refused:ru@{table.version - 2}"}
    position = app.max_position
    with pytest.raises(DomainError, match="nobody to deal to"):  # an empty room now: nothing more to record
        app.start_round("open-u", "ru", "")
    assert app.max_position == position
    failed = [v.render() for v in audit.verify_store(app) if not v.ok]
    assert not failed, failed


def test_a_used_request_id_answers_before_a_room_start_records_a_refusal(driver: Driver, app: PokdengApp) -> None:
    """A start that would unseat everyone is a refusal: a request id already used answers first (its first
    result, or DuplicateRequest for another command), and nothing is recorded."""
    play.open_wallets(driver, ["bk"], 100_000)
    play.open_wallets(driver, ["x", "y"], 10_000)
    play.open_table(driver, "rv", "room", [(1, "bk"), (2, "x"), (3, "y")], max_stake=1000)
    play.hold_banker_bid(driver, "rv", [("bk", 10)])
    first = app.start_round("open-v", "rv", "seed")
    round_id = first.id
    play.seat_bets(driver, round_id, 200)
    play.drive_round(driver, round_id)
    for player in ("x", "y"):
        driver.call("withdraw", player, app.get_wallet(player).available - 4_999)  # short of 1000 x 5
    position = app.max_position
    again = app.start_round("open-v", "rv", "seed")
    assert again.replayed and again.id == round_id and app.max_position == position
    with pytest.raises(DuplicateRequest):
        app.start_round("open-v", "rv", "another seed")
    assert app.max_position == position
    assert {s.player for s in app.get_table("rv").seats} == {"x", "y"}
    with pytest.raises(DomainError, match="'x', 'y' could not cover 5000"):  # a new request id: the refusal
        app.start_round("open-w", "rv", "seed")
    assert app.max_position > position and app.get_table("rv").seats == ()


def test_room_banker_disconnecting_mid_round_keeps_the_round_and_ends_the_role(driver: Driver, app: PokdengApp) -> None:
    wallets = ["bk", "x", "y"]
    play.open_wallets(driver, wallets)
    play.open_table(driver, "rd", "room", [(1, "bk"), (2, "x"), (3, "y")], max_stake=1000)
    play.hold_banker_bid(driver, "rd", [("bk", 10)])
    ledger = Ledger.take(app, wallets, ["rd"])
    round_id = play.start_round(driver, "rd")
    play.seat_bets(driver, round_id, 200)
    driver.call("disconnect_banker", "rd", "bk")
    assert app.get_table("rd").banker == "bk"  # the role lasts until the round ends
    play.drive_round(driver, round_id)
    ledger.assert_balanced(app)
    assert app.get_table("rd").banker is None
