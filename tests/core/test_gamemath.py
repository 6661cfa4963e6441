"""Game math (pokdeng_core.gamemath): exactness, brute-force cross-checks and the machine-driven simulation."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from itertools import combinations, permutations

import pytest

from pokdeng_core import evaluate, get_profile, parse_cards
from pokdeng_core.cards import Card, canonical_deck
from pokdeng_core.deal_counts import EXACT_STAKE
from pokdeng_core.draw_game_math import best_strategy
from pokdeng_core.gamemath import exact
from pokdeng_core.profiles import Profile
from pokdeng_core.rtp_results import RtpResult
from pokdeng_core.rtp_simulation import play_round, round_server_seed, simulate
from pokdeng_core.settlement import settle_values
from pokdeng_core.shuffle import shuffled_deck
from pokdeng_core.strategies import Strategy, reference_strategy

PROFILES = ("classic", "ante", "room", "kingmaker")
DRAW_PROFILES = ("classic", "room", "kingmaker")


@pytest.fixture(scope="module", params=PROFILES)
def reference(request: pytest.FixtureRequest) -> RtpResult:
    return exact(request.param)


# --- exactness --------------------------------------------------------------------------------


def test_probabilities_sum_to_one_exactly(reference: RtpResult) -> None:
    assert reference.win + reference.tie + reference.loss == 1
    assert sum(p for _, p in reference.hand_types) == 1
    assert sum(p for _, p in reference.nets) == 1
    assert all(p > 0 for _, p in reference.hand_types)
    mean = sum(net * p for net, p in reference.nets)
    assert reference.rtp == 1 + mean
    assert reference.variance == sum((net - mean) ** 2 * p for net, p in reference.nets)


def test_deal_counts() -> None:
    assert exact("classic").deals == math.comb(52, 2) * math.comb(50, 2) * 48 * 47
    assert exact("ante").deals == 416 * 415 * 414 * 413


def test_symmetric_games_are_fair_before_the_house_takes_anything() -> None:
    # Classic with the same strategy on both sides is symmetric: player and dealer are exchangeable.
    assert exact("classic").rtp == 1
    # Room: the banker's automatic play equals the player's reference play; only the commission remains.
    room = exact("room")
    assert room.commission is not None
    assert room.commission.rtp_before_commission == 1
    assert room.rtp == 1 - room.commission.player_commission
    assert room.commission.banker_commission == room.commission.player_commission
    # Ante: the ante alone is an even game; the edge is all in the bet.
    ante = exact("ante")
    assert ante.ante is not None
    assert ante.ante.ante_ev == 0
    assert ante.rtp == 1 + ante.ante.bet_ev / 2
    assert ante.ante.edge_per_ante == 2 * ante.house_edge
    assert ante.ante.bet_won + ante.ante.bet_push + ante.ante.bet_lost == 1


def test_kingmaker_side_bet() -> None:
    side = exact("kingmaker").side_bet
    assert side is not None
    assert side.offer_probability == Fraction(8, 52)
    # up 8: a 0 or an ace makes a natural (16 + 4 of 51); up 9: a 0 or another 9 (16 + 3 of 51)
    assert side.natural_probability == Fraction(20 + 19, 2 * 51)
    assert side.rtp == side.natural_probability * Fraction(22, 10)
    assert side.best_conditional_rtp == Fraction(20, 49) * Fraction(22, 10)  # still below 1: never worth it
    assert exact("classic").side_bet is None


def test_money_exact_and_rounded() -> None:
    assert exact("kingmaker", stake=EXACT_STAKE).rtp == exact("kingmaker").rtp
    # At a stake of 10 minor units a 0.95 win pays floor(9.5) = 9.
    assert exact("kingmaker", stake=10).rtp < exact("kingmaker").rtp
    # The 3% commission rounds up on a stake of 10: ceil(0.3) = 1.
    assert exact("room", stake=10).rtp < exact("room").rtp
    assert exact("ante", stake=2).rtp == exact("ante").rtp  # ante pays 1:1 halves: no rounding


def test_best_strategy_is_best_per_total() -> None:
    for name in DRAW_PROFILES:
        profile = get_profile(name)
        ref, best = exact(profile), exact(profile, "best")
        assert best.rtp >= ref.rtp
        assert best.strategy == best_strategy(profile)
        for d in best.decisions:
            if d.rule == "choose":
                assert d.chosen == d.best
                assert max(d.ev_stand, d.ev_draw) == (d.ev_draw if d.chosen == "draw" else d.ev_stand)
        # The RTP is the sum over situations: changing the action at one total moves it by P * (difference).
        for d in ref.decisions:
            if d.rule == "choose" and d.chosen != d.best:
                flipped = Strategy("flip", ref.strategy.player_draws ^ {d.total}, ref.strategy.banker_draws)
                gain = abs(d.ev_draw - d.ev_stand) * d.probability
                assert exact(profile, flipped).rtp == ref.rtp + gain


def test_reference_strategies_are_as_documented() -> None:
    assert reference_strategy(get_profile("classic")) == Strategy("reference", frozenset(range(5)), frozenset(range(5)))
    assert reference_strategy(get_profile("room")) == Strategy("reference")  # stands on every choice (4-7)
    assert reference_strategy(get_profile("kingmaker")) == Strategy("reference")
    assert exact("kingmaker").strategy_text == "player draws on 0-3, stands on 4-7; banker draws on 0-5, stands on 6-7"


# --- brute force over every ordering of a small deck ----------------------------------------------


def _model_hands(profile: Profile, strategy: Strategy, s: Sequence[Card]) -> tuple[tuple[Card, ...], tuple[Card, ...]]:
    """The final hands of one player and the banker from a shoe: P B P B, then the player's draw, the banker's."""
    player, banker, nxt = [s[0], s[2]], [s[1], s[3]], 4
    if not evaluate(profile, (s[1], s[3])).is_pok:
        if strategy.player_action(profile, evaluate(profile, (s[0], s[2])).taem) == "draw":
            player.append(s[nxt])
            nxt += 1
        if strategy.banker_action(profile, evaluate(profile, (s[1], s[3])).taem) == "draw":
            banker.append(s[nxt])
    return tuple(player), tuple(banker)


def _brute(profile: Profile, strategy: Strategy, deck: tuple[Card, ...]) -> dict[str, object]:
    """Deal every ordered sequence of six cards as the machine deals: P B P B, then the draws in turn."""
    nets: Counter[Fraction] = Counter()
    outcomes: Counter[str] = Counter()
    types: Counter[str] = Counter()
    n = 0
    for s in permutations(deck, 6):
        player, banker = _model_hands(profile, strategy, s)
        p, b = evaluate(profile, player), evaluate(profile, banker)
        r = settle_values(profile, p, b, EXACT_STAKE)
        nets[Fraction(r.player_net, EXACT_STAKE)] += 1
        outcomes[r.outcome.value] += 1
        types[p.label] += 1
        n += 1
    return {
        "rtp": 1 + sum(net * k for net, k in nets.items()) / n,
        "nets": {net: Fraction(k, n) for net, k in nets.items()},
        "win": Fraction(outcomes["player_wins"], n),
        "tie": Fraction(outcomes["tie"], n),
        "types": {name: Fraction(k, n) for name, k in types.items()},
    }


# Nine cards with a tong (7 7 7), J Q K of one suit (straight flush, or sam lueang in classic),
# poks (9 + face, A + 7), flushes and a pair.
SMALL_DECK = parse_cards("7S 7H 7C JS QS KS 9D AH 5S")


@pytest.mark.parametrize("name", DRAW_PROFILES)
@pytest.mark.parametrize("which", ["reference", "custom"])
def test_exact_matches_brute_force_on_a_small_deck(name: str, which: str) -> None:
    profile = get_profile(name)
    strategy = (
        reference_strategy(profile) if which == "reference" else Strategy("custom", frozenset({4, 6}), frozenset({5}))
    )
    brute = _brute(profile, strategy, SMALL_DECK)
    result = exact(profile, strategy, deck=SMALL_DECK)
    assert result.rtp == brute["rtp"]
    assert dict(result.nets) == brute["nets"]
    assert result.win == brute["win"]
    assert result.tie == brute["tie"]
    assert dict(result.hand_types) == brute["types"]
    assert "pok" in result_types(result)
    if which == "custom":  # draws on 4, so 7 7 + 7 is reachable
        assert "tong" in result_types(result)


def result_types(result: RtpResult) -> set[str]:
    return {name for name, _ in result.hand_types}


def test_two_card_hand_types_match_the_1326_hands() -> None:
    profile = get_profile("classic")
    never = Strategy("never", frozenset(), frozenset())  # nobody draws: the final hand is the dealt pair
    result = exact(profile, never)
    hands = list(combinations(canonical_deck(1), 2))
    assert len(hands) == 1326
    counts = Counter(evaluate(profile, hand).label for hand in hands)
    assert dict(result.hand_types) == {label: Fraction(k, 1326) for label, k in counts.items()}
    assert dict(result.hand_types)["pok"] + dict(result.hand_types)["pok deng"] == Fraction(
        252, 1326
    )  # 118 eights, 128 nines, 6 nine-nines


def test_ante_hand_types_match_the_unordered_two_card_hands() -> None:
    profile = get_profile("ante")
    types = canonical_deck(1)
    counts: Counter[str] = Counter()
    for i, a in enumerate(types):
        for b in types[i:]:
            value = evaluate(profile, (a, b))
            if 71 <= value.value <= 75:
                name = value.label
            else:
                name = f"{value.value // 10} {'special' if value.special else 'plain'}"
            counts[name] += math.comb(8, 2) if a == b else 64
    total = math.comb(416, 2)
    assert sum(counts.values()) == total
    assert dict(exact(profile).hand_types) == {name: Fraction(k, total) for name, k in counts.items()}


# --- simulation through the state machine ------------------------------------------------------


def test_round_server_seed_is_deterministic() -> None:
    assert round_server_seed(7, 3) == round_server_seed("7", 3)
    assert round_server_seed(7, 3) != round_server_seed(7, 4)
    assert len(round_server_seed(7, 3)) == 32


def test_simulation_is_reproducible() -> None:
    a = simulate("kingmaker", 60, seed=11)
    b = simulate("kingmaker", 60, seed=11)
    c = simulate("kingmaker", 60, seed=12)
    assert a == b
    assert a != c


@pytest.mark.parametrize("name", PROFILES)
def test_simulation_agrees_with_exact(name: str) -> None:
    """4,000 whole rounds through the machine, fixed seed: every figure within 4 standard errors."""
    strategy = "best" if name == "kingmaker" else "reference"
    truth = exact(name, strategy)
    sim = simulate(name, 4000, seed=2024, strategy=strategy)
    assert sim.strategy == truth.strategy
    assert sim.rtp.contains(float(truth.rtp), sigmas=4)
    assert sim.rtp.low <= sim.rtp.value <= sim.rtp.high
    for est, p in ((sim.win, truth.win), (sim.tie, truth.tie), (sim.loss, truth.loss)):
        assert est.contains(float(p), sigmas=4)
    exact_types = dict(truth.hand_types)
    for hand, est in sim.hand_types:
        assert hand in exact_types
        assert abs(est.value - float(exact_types[hand])) <= 4 * math.sqrt(float(exact_types[hand]) / sim.rounds)
    assert sim.sd == pytest.approx(truth.sd, rel=0.1)
    if name == "kingmaker":
        assert sim.side_bet_rtp is not None and truth.side_bet is not None
        assert sim.side_bet_rtp.contains(float(truth.side_bet.rtp), sigmas=4)


@pytest.mark.parametrize("name", DRAW_PROFILES)
def test_machine_rounds_follow_the_enumerated_deal_model(name: str) -> None:
    """Round by round, the machine's result equals the model the enumeration counts: P B P B, then the draws."""
    profile = get_profile(name)
    strategy = best_strategy(profile)
    for i in range(150):
        server = round_server_seed("model", i)
        player, banker = _model_hands(profile, strategy, shuffled_deck(server, "sim:model", i, 1))
        expected = settle_values(profile, evaluate(profile, player), evaluate(profile, banker), 1000)
        played = play_round(profile, strategy, server, "model", i, 1000)
        assert (played.net, played.outcome) == (expected.player_net, expected.outcome.value), (i, player, banker)
