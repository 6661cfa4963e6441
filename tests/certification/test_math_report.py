"""The math report: every exact figure is gamemath's, the derived ones (hit frequency, per wager) recomputed
by hand from gamemath's law of the net, and the simulation inside its intervals."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest
from scipy import stats as scipy_stats  # type: ignore[import-untyped]

from pokdeng_core.gamemath import exact
from pokdeng_core.profiles import get_profile
from pokdeng_core.rtp_results import RtpResult
from pokdeng_core.rtp_simulation import simulate
from pokdeng_service.certification import render
from pokdeng_service.certification.math import MathParameters, build_math_report, profile_variants


def _f(value: dict[str, Any]) -> Fraction:
    fraction = Fraction(value["exact"])
    assert value["decimal"] == pytest.approx(float(fraction), rel=1e-15)
    return fraction


def _check_exact(figures: dict[str, Any], result: RtpResult) -> None:
    assert _f(figures["rtp"]) == result.rtp
    assert _f(figures["house_edge"]) == 1 - result.rtp
    assert (_f(figures["win"]), _f(figures["tie"]), _f(figures["loss"])) == (result.win, result.tie, result.loss)
    assert _f(figures["variance"]) == result.variance and figures["sd"] == result.sd
    assert [(o["net"], o["probability"]) for o in figures["outcomes"]] == [
        ({"exact": str(n), "decimal": float(n)}, {"exact": str(p), "decimal": float(p)}) for n, p in result.nets
    ]
    assert [(h["hand"], _f(h["probability"])) for h in figures["hand_classes"]] == list(result.hand_types)
    assert _f(figures["hit_frequency"]) == sum(p for net, p in result.nets if net > 0)
    assert [(d["total"], _f(d["ev_stand"]), _f(d["ev_draw"])) for d in figures["decisions"]] == [
        (d.total, d.ev_stand, d.ev_draw) for d in result.decisions
    ]
    wagers = {w["wager"]: w for w in figures["wagers"]}
    if result.side_bet is not None:
        side = wagers["side bet (per unit, placed whenever offered)"]
        p, pays = result.side_bet.natural_probability, result.side_bet.payout
        assert _f(side["rtp"]) == result.side_bet.rtp == p * (1 + pays)  # a win returns 1 + 1.2, a loss nothing
        mean = result.side_bet.rtp - 1
        assert side["sd"] == pytest.approx(math.sqrt(p * pays**2 + (1 - p) - mean**2), rel=1e-12)
        assert _f(side["hit_frequency"]) == p
    if result.ante is not None:
        assert _f(wagers["ante (per unit of ante)"]["rtp"]) == 1 + result.ante.ante_ev
        assert _f(wagers["bet (per unit of bet)"]["rtp"]) == 1 + result.ante.bet_ev
        # the wager is one ante and one bet of the same size: its RTP is their mean
        assert result.rtp == 1 + (result.ante.ante_ev + result.ante.bet_ev) / 2
    if result.commission is not None:
        before = wagers["stake before the player's commission"]
        assert _f(before["rtp"]) - _f(before["player_commission"]) == result.rtp


@pytest.mark.parametrize("profile", ["kingmaker", "ante", "room"])
def test_the_exact_figures_are_gamemath_s(profile: str) -> None:
    report = build_math_report(MathParameters(profile, rounds=0))
    (variant,) = report["variants"]
    assert [s["strategy"] for s in variant["strategies"]] == ["reference", "best"]
    for entry in variant["strategies"]:
        _check_exact(entry["exact"], exact(profile, entry["strategy"]))
        assert "simulation" not in entry


def test_every_table_option_of_classic() -> None:
    keys = [p.key for p in profile_variants("classic")]
    assert keys == ["classic@1", "classic@1+straights", "classic@1+ace_low+straights"]
    report = build_math_report(MathParameters("classic", strategies=("reference",), rounds=0))
    for variant, profile in zip(report["variants"], profile_variants("classic"), strict=True):
        assert variant["key"] == profile.key and variant["options"] == profile.options
        _check_exact(variant["strategies"][0]["exact"], exact(profile, "reference"))
    only = build_math_report(MathParameters("classic", (("straights", True),), ("best",), rounds=0))
    assert [v["key"] for v in only["variants"]] == ["classic@1+straights"]


def test_the_simulation_beside_the_exact_values() -> None:
    rounds = 3_000
    report = build_math_report(MathParameters("kingmaker", strategies=("reference",), rounds=rounds, seed="t"))
    simulated = report["variants"][0]["strategies"][0]["simulation"]
    reference = simulate(get_profile("kingmaker"), rounds, "t", "reference")
    figures = {f["figure"]: f for f in simulated["figures"]}
    assert figures["rtp"]["estimate"] == reference.rtp.value
    assert (figures["rtp"]["low"], figures["rtp"]["high"]) == (reference.rtp.low, reference.rtp.high)
    m = len(figures)
    z = scipy_stats.norm.isf(0.05 / (2 * m))  # Bonferroni: the figures jointly at 95%
    assert simulated["joint_z"] == pytest.approx(z, rel=1e-9)
    rtp = figures["rtp"]
    assert rtp["joint_low"] == pytest.approx(rtp["estimate"] - z * rtp["se"])
    exact_rtp = float(exact("kingmaker").rtp)
    assert rtp["exact"] == exact_rtp and rtp["z"] == pytest.approx((rtp["estimate"] - exact_rtp) / rtp["se"])
    assert "side_bet_rtp" in figures
    assert simulated["all_inside_joint"] and report["simulations_all_inside_joint"]
    page = render.math_html(report)
    assert "Game math report: kingmaker" in page and "84457327/87250800" in page


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["classic", "ante", "room", "kingmaker"])
def test_every_profile_s_simulation_inside_its_intervals(profile: str) -> None:
    report = build_math_report(MathParameters(profile, rounds=6_000, seed="certification", workers=2))
    for variant in report["variants"]:
        for entry in variant["strategies"]:
            _check_exact(entry["exact"], exact(get_profile(variant["key"].split("@")[0], **variant["options"]),
                                               entry["strategy"]))  # fmt: skip
            outside = [f["figure"] for f in entry["simulation"]["figures"] if not f["inside_joint"]]
            assert outside == [], (variant["key"], entry["strategy"], outside)
