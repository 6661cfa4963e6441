"""``pokdeng math-report``: the exact game math of a profile beside a simulation through the machine.

For each table option of the profile (classic: as preset, with straights, with straights and ace low;
the others take none) and each strategy (reference, best), ``pokdeng_core.gamemath.exact`` gives exact
fractions: the law of the net per unit staked (every outcome), win/tie/loss, every final hand class, RTP,
house edge, hit frequency (P(net > 0)), SD per unit staked, the decisions; per wager the ante and the
bet (ante), the side bet (kingmaker), the commission (room). ``gamemath.simulate`` plays the same
profile and strategy through the round state machine; each simulated figure is shown with its 95%
interval and a joint interval (Bonferroni over the figures of that simulation) beside the exact value.
"""

from __future__ import annotations

import math
import multiprocessing
import platform
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from pokdeng_core.gamemath import exact
from pokdeng_core.profiles import Profile, get_profile
from pokdeng_core.rtp_results import AnteMath, RtpResult, SideBetMath, SimulationResult
from pokdeng_core.rtp_simulation import simulate
from pokdeng_service.certification.stats import normal_sf
from pokdeng_service.version import __version__

__all__ = ("MathParameters", "build_math_report", "exact_figures", "profile_variants", "simulated_figures")

FORMAT = "pokdeng-math-report"
FORMAT_VERSION = 1
STRATEGIES = ("reference", "best")
CONFIDENCE = 0.95


@dataclass(frozen=True, slots=True)
class MathParameters:
    profile: str
    options: tuple[tuple[str, bool], ...] | None = None  # None: every variant of the profile's options
    strategies: tuple[str, ...] = STRATEGIES
    rounds: int = 20_000
    seed: str = "pokdeng-math-report"
    workers: int = 1


def profile_variants(name: str, options: tuple[tuple[str, bool], ...] | None = None) -> list[Profile]:
    """The profile under each table option it takes (or just the options given)."""
    if options is not None:
        return [get_profile(name, **dict(options))]
    if name == "classic":
        return [get_profile(name), get_profile(name, straights=True), get_profile(name, straights=True, ace_low=True)]
    return [get_profile(name)]


def fx(value: Fraction) -> dict[str, Any]:
    return {"exact": str(value), "decimal": float(value)}


def exact_figures(result: RtpResult) -> dict[str, Any]:
    """Every exact figure of one profile and strategy (fractions as ``{"exact": "p/q", "decimal": x}``)."""
    hit = sum((p for net, p in result.nets if net > 0), Fraction(0))
    figures: dict[str, Any] = {
        "rtp": fx(result.rtp),
        "house_edge": fx(result.house_edge),
        "hit_frequency": fx(hit),
        "win": fx(result.win),
        "tie": fx(result.tie),
        "loss": fx(result.loss),
        "variance": fx(result.variance),
        "sd": result.sd,
        "deals": result.deals,
        "method": result.method,
        "outcomes": [{"net": fx(net), "probability": fx(p)} for net, p in result.nets],
        "hand_classes": [{"hand": name, "probability": fx(p)} for name, p in result.hand_types],
        "decisions": [
            {
                "total": d.total,
                "rule": d.rule,
                "probability": fx(d.probability),
                "ev_stand": fx(d.ev_stand),
                "ev_draw": fx(d.ev_draw),
                "best": d.best,
                "chosen": d.chosen,
            }
            for d in result.decisions
        ],
        "wagers": _wagers(result),
    }
    return figures


def _wagers(result: RtpResult) -> list[dict[str, Any]]:
    """RTP per wager: the stake as a whole; ante: the ante and the bet; kingmaker: the side bet."""
    wagers = [
        {
            "wager": "ante + bet" if result.ante is not None else "stake",
            "rtp": fx(result.rtp),
            "house_edge": fx(result.house_edge),
            "sd": result.sd,
        }
    ]
    if result.ante is not None:
        wagers += _ante_wagers(result.ante)
    if result.side_bet is not None:
        wagers.append(_side_bet_wager(result.side_bet))
    if result.commission is not None:
        m = result.commission
        wagers.append(
            {
                "wager": "stake before the player's commission",
                "rtp": fx(m.rtp_before_commission),
                "player_commission": fx(m.player_commission),
                "banker_commission": fx(m.banker_commission),
                "player_rate": fx(m.player_rate),
                "banker_rate": fx(m.banker_rate),
            }
        )
    return wagers


def _ante_wagers(a: AnteMath) -> list[dict[str, Any]]:
    """The ante's wagers: the ante, the bet, and the house edge per ante."""
    return [
        {"wager": "ante (per unit of ante)", "rtp": fx(1 + a.ante_ev), "house_edge": fx(-a.ante_ev)},
        {
            "wager": "bet (per unit of bet)",
            "rtp": fx(1 + a.bet_ev),
            "house_edge": fx(-a.bet_ev),
            "won": fx(a.bet_won),
            "push": fx(a.bet_push),
            "lost": fx(a.bet_lost),
        },
        {"wager": "house edge per ante (a wager is 2 antes)", "house_edge": fx(a.edge_per_ante)},
    ]


def _side_bet_wager(s: SideBetMath) -> dict[str, Any]:
    """The side bet, placed whenever offered: its RTP, hit frequency, pay and spread."""
    p = s.natural_probability
    lost = (s.rtp - 1 - p * s.payout) / (1 - p)  # the net of a lost side bet per unit (-1)
    mean = s.rtp - 1
    variance = p * s.payout**2 + (1 - p) * lost**2 - mean**2
    return {
        "wager": "side bet (per unit, placed whenever offered)",
        "rtp": fx(s.rtp),
        "house_edge": fx(s.house_edge),
        "hit_frequency": fx(p),
        "offered": fx(s.offer_probability),
        "pays": fx(s.payout),
        "sd": math.sqrt(variance),
        "best_case_rtp_knowing_own_cards": fx(s.best_conditional_rtp),
    }


def _z(confidence: float) -> float:
    low, high = 0.0, 40.0
    target = (1 - confidence) / 2
    for _ in range(200):
        mid = (low + high) / 2
        if normal_sf(mid) > target:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def _wilson(p: float, n: int, z: float) -> tuple[float, float]:
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def simulated_figures(sim: SimulationResult, reference: RtpResult) -> dict[str, Any]:
    """Each simulated figure beside its exact value: 95% interval, joint interval and z."""
    rows = _simulated_rows(sim, reference)
    joint = 1 - (1 - CONFIDENCE) / len(rows)
    z_joint = _z(joint)
    figures = [_simulated_figure(key, title, est, exact_value, n, z_joint) for key, title, est, exact_value, n in rows]
    return {
        "rounds": sim.rounds,
        "seed": sim.seed,
        "stake": sim.stake,
        "sd": sim.sd,
        "exact_sd": reference.sd,
        "confidence": CONFIDENCE,
        "joint_confidence": CONFIDENCE,
        "joint_z": z_joint,
        "figures": figures,
        "all_inside_joint": all(f["inside_joint"] for f in figures if f["exact"] is not None),
    }


def _simulated_rows(sim: SimulationResult, reference: RtpResult) -> list[tuple[str, str, Any, Fraction | None, int]]:
    """The figures simulated: (key, title, estimate, exact value, sample size), the side bet's if it has one."""
    exact_types = dict(reference.hand_types)
    rows: list[tuple[str, str, Any, Fraction | None, int]] = [
        ("rtp", "RTP", sim.rtp, reference.rtp, sim.rounds),
        ("win", "win", sim.win, reference.win, sim.rounds),
        ("tie", "tie", sim.tie, reference.tie, sim.rounds),
        ("loss", "loss", sim.loss, reference.loss, sim.rounds),
    ]
    for name, est in sim.hand_types:
        rows.append((f"hand:{name}", f"hand: {name}", est, exact_types.get(name), sim.rounds))
    if sim.side_bet_rtp is not None and reference.side_bet is not None:
        title = f"side bet RTP ({sim.side_bets} bets)"
        rows.append(("side_bet_rtp", title, sim.side_bet_rtp, reference.side_bet.rtp, sim.side_bets))
    return rows


def _simulated_figure(
    key: str, title: str, est: Any, exact_value: Fraction | None, n: int, z_joint: float
) -> dict[str, Any]:
    """One figure: its estimate and intervals (a proportion's joint interval Wilson's), its exact value and z."""
    proportion = key not in ("rtp", "side_bet_rtp")
    if proportion:
        low_j, high_j = _wilson(est.value, n, z_joint)
    else:
        low_j, high_j = est.value - z_joint * est.se, est.value + z_joint * est.se
    x = None if exact_value is None else float(exact_value)
    return {
        "figure": key,
        "title": title,
        "estimate": est.value,
        "se": est.se,
        "low": est.low,
        "high": est.high,
        "joint_low": low_j,
        "joint_high": high_j,
        "exact": x,
        "z": None if x is None or not est.se else (est.value - x) / est.se,
        "inside": x is not None and est.low <= x <= est.high,
        "inside_joint": x is not None and low_j <= x <= high_j,
    }


def _simulate_job(name: str, options: tuple[tuple[str, bool], ...], rounds: int, seed: str, strategy: str) -> Any:
    return simulate(get_profile(name, **dict(options)), rounds, seed, strategy)


def build_math_report(params: MathParameters, *, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The math report of ``params.profile`` (JSON-ready)."""
    started = time.perf_counter()
    variants = profile_variants(params.profile, params.options)
    jobs: list[tuple[Profile, str]] = [(p, s) for p in variants for s in params.strategies]
    t0 = time.perf_counter()
    exacts = _exacts(jobs, progress)
    exact_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    sims = _simulations(params, jobs, progress) if params.rounds else {}
    sim_seconds = time.perf_counter() - t0
    out_variants = [_variant(profile, params.strategies, exacts, sims) for profile in variants]
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "generator": f"pokdeng {__version__}",
        "profile": params.profile,
        "parameters": {
            "options": None if params.options is None else dict(params.options),
            "strategies": list(params.strategies),
            "rounds": params.rounds,
            "seed": params.seed,
            "workers": params.workers,
            "simulation_schedule": (
                "round i: server seed SHA-256(UTF-8(seed) || i as 8 bytes big-endian), client seed 'sim:<seed>', "
                "nonce i (docs/game-math.md, 'Simulation through the machine')"
            ),
        },
        "definitions": DEFINITIONS,
        "variants": out_variants,
        "simulations_all_inside_joint": all(
            e["simulation"]["all_inside_joint"] for v in out_variants for e in v["strategies"] if "simulation" in e
        ),
        "timings_seconds": {"exact": exact_seconds, "simulation": sim_seconds, "total": time.perf_counter() - started},
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
    }


def _exacts(
    jobs: Sequence[tuple[Profile, str]], progress: Callable[[str], None] | None
) -> dict[tuple[str, str], RtpResult]:
    """The exact figures of each (profile, strategy)."""
    exacts: dict[tuple[str, str], RtpResult] = {}
    for profile, strategy in jobs:
        exacts[(profile.key, strategy)] = exact(profile, strategy)
        if progress is not None:
            progress(f"exact {profile.key} {strategy}")
    return exacts


def _simulations(
    params: MathParameters, jobs: Sequence[tuple[Profile, str]], progress: Callable[[str], None] | None
) -> dict[tuple[str, str], SimulationResult]:
    """Each (profile, strategy) simulated through the machine, in this process or in ``params.workers``."""
    sims: dict[tuple[str, str], SimulationResult] = {}
    args = [(p.name, tuple(sorted(p.options.items())), params.rounds, params.seed, s) for p, s in jobs]
    if params.workers <= 1:
        for (profile, strategy), a in zip(jobs, args, strict=True):
            sims[(profile.key, strategy)] = _simulate_job(*a)
            if progress is not None:
                progress(f"simulated {profile.key} {strategy}")
        return sims
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=params.workers, mp_context=context) as pool:
        futures = [pool.submit(_simulate_job, *a) for a in args]
        for (profile, strategy), future in zip(jobs, futures, strict=True):
            sims[(profile.key, strategy)] = future.result()
            if progress is not None:
                progress(f"simulated {profile.key} {strategy}")
    return sims


def _variant(
    profile: Profile,
    strategies: Sequence[str],
    exacts: dict[tuple[str, str], RtpResult],
    sims: dict[tuple[str, str], SimulationResult],
) -> dict[str, Any]:
    """One variant of the profile: each strategy's exact figures, and its simulation's beside them."""
    entries = []
    for strategy in strategies:
        result = exacts[(profile.key, strategy)]
        entry: dict[str, Any] = {
            "strategy": strategy,
            "strategy_text": result.strategy_text,
            "exact": exact_figures(result),
        }
        sim = sims.get((profile.key, strategy))
        if sim is not None:
            entry["simulation"] = simulated_figures(sim, result)
        entries.append(entry)
    return {
        "key": profile.key,
        "title": profile.title,
        "options": profile.options,
        "decks": profile.decks,
        "strategies": entries,
    }


DEFINITIONS = {
    "net": "what the player's wallet gains on a stake (negative: loses), after commission, per unit staked",
    "rtp": "E[amount returned] / stake = 1 + E[net]",
    "house_edge": "1 - RTP",
    "hit_frequency": "P(net > 0): the stake returns more than it cost",
    "sd": "the standard deviation of the net per unit staked",
    "outcomes": "the law of the net per unit staked: every value it takes, with its exact probability",
    "hand_classes": "the player's final hand, by the labels of pokdeng_core.evaluation.evaluate",
    "scope": "one player's hand against the banker at exact multipliers (large stakes): docs/game-math.md",
}
