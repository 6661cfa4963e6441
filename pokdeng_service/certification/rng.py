"""``pokdeng rng-report``: the statistics of the seeded shuffle over a documented schedule of shoes.

``build_rng_report`` runs the shoes of each deck count (``tallies.run_shoes``), turns the tallies into
tests (``shoe_tests``), adds the battery's p-values (``battery``), corrects for the number of tests
(Holm) and states the verdict, the power of each test and every parameter a lab needs to reproduce the
figures (docs/certification.md). The result is a JSON-ready dict; ``render`` draws and prints it.
"""

from __future__ import annotations

import hashlib
import math
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pokdeng_core.cards import canonical_deck
from pokdeng_core.shuffle import SHUFFLE_ALGORITHM, order_digest
from pokdeng_service.certification import schedule, stats
from pokdeng_service.certification.battery import BatteryResult, BatteryTest
from pokdeng_service.certification.tallies import RED, TYPES, Shuffler, Tallies, run_shoes, scheduled_orders
from pokdeng_service.version import __version__

__all__ = ("RngParameters", "build_rng_report", "shoe_tests", "verdict")

FORMAT = "pokdeng-rng-report"
FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class RngParameters:
    report_seed: str
    shoes: dict[int, int]  # deck count -> shoes
    alpha: float = 0.01  # family-wise error rate (Holm)
    power: float = 0.9  # the power the detectable effects are stated at
    battery: str = "quick"  # quick, full or none
    workers: int = 1


def _test(
    test_id: str,
    title: str,
    decks: int | None,
    statistic: float,
    pvalue: float,
    *,
    kind: str,
    df: int | None = None,
    cells: int | None = None,
    min_expected: float | None = None,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": test_id,
        "title": title,
        "decks": decks,
        "kind": kind,
        "statistic": statistic,
        "df": df,
        "cells": cells,
        "min_expected": min_expected,
        "pvalue": pvalue,
        **(details or {}),
    }


def hand_probabilities(decks: int) -> tuple[list[tuple[int, int]], list[float]]:
    """The unordered two-card hands by card type (a <= b) and their probabilities in a ``decks``-deck shoe."""
    size = 52 * decks
    pairs, probs = [], []
    for a in range(TYPES):
        for b in range(a, TYPES):
            p = decks * (decks - 1) if a == b else 2 * decks * decks
            if p:
                pairs.append((a, b))
                probs.append(p / (size * (size - 1)))
    return pairs, probs


def match_moments(decks: int) -> tuple[float, float]:
    """Mean and variance of the number of positions at which two independent shoes hold the same type."""
    size, k = 52 * decks, TYPES
    same = decks * (decks - 1) / (size * (size - 1))
    other = decks * decks / (size * (size - 1))
    second = size / k + k * size * (size - 1) * same**2 + k * (k - 1) * size * (size - 1) * other**2
    mean = float(decks)
    return mean, second - mean * mean


def shoe_tests(t: Tallies) -> list[dict[str, Any]]:
    """The tests of one deck count's tallies (docs/certification.md, "The statistics"), in their order."""
    return [
        _positions_test(t),
        _first_card_test(t),
        *_hand_tests(t),
        _serial_first_test(t),
        _serial_matches_test(t),
        _colour_runs_test(t),
        _shoe_runs_test(t),
    ]


def _positions_test(t: Tallies) -> dict[str, Any]:
    """1. every (card type, position) cell: N/52 expected; the table's margins are fixed, so the statistic
    times (M - 1) / M is chi-square with 51 (M - 1) degrees of freedom (docs/certification.md)."""
    size = t.size
    expected = t.shoes / TYPES
    cells = t.positions.astype(np.float64)
    raw = float(((cells - expected) ** 2).sum() / expected)
    scale = (size - 1) / size
    df = (TYPES - 1) * (size - 1)
    return _test(
        f"positions/{t.decks}-deck",
        f"card type x position ({TYPES} x {size} cells)",
        t.decks,
        raw * scale,
        stats.chi2_sf(raw * scale, df),
        kind="chi-square",
        df=df,
        cells=TYPES * size,
        min_expected=expected,
        details={"raw_statistic": raw, "scale": scale},
    )


def _first_card_test(t: Tallies) -> dict[str, Any]:
    """2. the first card."""
    first = stats.chi_square(t.positions[:, 0].tolist(), [t.shoes / TYPES] * TYPES)
    return _chi(f"first-card/{t.decks}-deck", "first card dealt: its type", t.decks, first)


def _hand_tests(t: Tallies) -> list[dict[str, Any]]:
    """3. two-card hands of one player (positions 0, 2) and of the banker (1, 3), unordered."""
    pairs, probs = hand_probabilities(t.decks)
    out = []
    for who, table in (("player", t.player_hands), ("banker", t.banker_hands)):
        observed = [table[a, b] + (table[b, a] if a != b else 0) for a, b in pairs]
        result = stats.chi_square(observed, [t.shoes * p for p in probs])
        cards = "0 and 2" if who == "player" else "1 and 3"
        title = f"{who}'s two-card hand (positions {cards}), by types"
        out.append(_chi(f"hands-{who}/{t.decks}-deck", title, t.decks, result))
    return out


def _serial_first_test(t: Tallies) -> dict[str, Any]:
    """4. serial: the first cards of shoes 2j and 2j + 1."""
    pair_count = t.shoes // 2
    serial = stats.chi_square(t.first_pairs.ravel().tolist(), [pair_count / TYPES**2] * TYPES**2)
    title = "serial: first cards of shoes 2j and 2j+1 (52 x 52)"
    return _chi(f"serial-first/{t.decks}-deck", title, t.decks, serial)


def _serial_matches_test(t: Tallies) -> dict[str, Any]:
    """5. serial: positions where shoes 2j and 2j + 1 hold the same type (z on the mean, exact moments)."""
    pair_count = t.shoes // 2
    mean, variance = match_moments(t.decks)
    total = float((np.arange(t.size + 1) * t.matches).sum())
    z = (total / pair_count - mean) / math.sqrt(variance / pair_count)
    return _test(
        f"serial-matches/{t.decks}-deck",
        "serial: positions where shoes 2j and 2j+1 agree (mean, z)",
        t.decks,
        z,
        2 * stats.normal_sf(abs(z)),
        kind="z",
        details={
            "observed_mean": total / pair_count,
            "expected_mean": mean,
            "variance": variance,
            "pairs": pair_count,
        },
    )


def _colour_runs_test(t: Tallies) -> dict[str, Any]:
    """6. runs of colour within each shoe against their exact law."""
    law = stats.runs_distribution(26 * t.decks, 26 * t.decks)
    runs = stats.chi_square(t.colour_runs.tolist(), [t.shoes * float(p) for p in law], pool=5.0)
    return _chi(f"runs-colour/{t.decks}-deck", "runs of red/black within a shoe (exact law)", t.decks, runs)


def _shoe_runs_test(t: Tallies) -> dict[str, Any]:
    """7. runs across shoes: changes of the first card's colour from one shoe to the next ~ Binomial(N-1, 1/2)."""
    n = t.shoes
    colours = RED[t.first_types.astype(np.intp)]
    changes = int((colours[1:] != colours[:-1]).sum())
    z_changes, p_changes = stats.binomial_two_sided(changes, n - 1)
    return _test(
        f"runs-shoes/{t.decks}-deck",
        "runs across shoes: first card red/black, shoe to shoe",
        t.decks,
        z_changes,
        p_changes,
        kind="z",
        details={"changes": changes, "trials": n - 1},
    )


def _chi(test_id: str, title: str, decks: int, result: stats.ChiSquare) -> dict[str, Any]:
    return _test(
        test_id,
        title,
        decks,
        result.statistic,
        result.pvalue,
        kind="chi-square",
        df=result.df,
        cells=result.cells,
        min_expected=result.min_expected,
    )


def battery_tests(results: Sequence[BatteryResult]) -> list[dict[str, Any]]:
    """One test per p-value line (a test that prints two lines for one ntuple gets ids ``.../1`` and ``.../2``)."""
    seen: dict[tuple[str, str, int], int] = {}
    out = []
    for r in results:
        key = (r.command, r.test, r.ntup)
        seen[key] = seen.get(key, 0) + 1
        out.append((r, seen[key]))
    repeated = {key for key, count in seen.items() if count > 1}
    return [
        _test(
            f"dieharder/{r.test}/{r.ntup}" + (f"/{k}" if (r.command, r.test, r.ntup) in repeated else ""),
            f"dieharder {r.test}"
            + (f" ntup {r.ntup}" if r.ntup else "")
            + (f" ({k})" if (r.command, r.test, r.ntup) in repeated else ""),
            None,
            r.pvalue,
            r.pvalue,
            kind="dieharder",
            details={
                "tsamples": r.tsamples,
                "psamples": r.psamples,
                "dieharder_assessment": r.assessment,
                "command": r.command,
                "ntup": r.ntup,
            },
        )
        for r, k in out
    ]


def verdict(tests: list[dict[str, Any]], alpha: float, power: float) -> dict[str, Any]:
    """Holm over every test and the second-level test of their p-values; each test's power at the
    Bonferroni level alpha / m (where Holm's first step rejects)."""
    first_level = [t["pvalue"] for t in tests]
    d, p_ks = stats.ks_uniform(first_level)
    tests.append(
        _test(
            "second-level/ks",
            "second level: all p-values above against U(0,1), Kolmogorov-Smirnov",
            None,
            d,
            p_ks,
            kind="ks",
            details={"pvalues": len(first_level)},
        )
    )
    adjusted = stats.holm([t["pvalue"] for t in tests])
    m = len(tests)
    level = alpha / m
    for test, p in zip(tests, adjusted, strict=True):
        test["holm_pvalue"] = p
        test["rejected"] = p < alpha
        test["power"] = _power(test, level, power)
    rejected = [t["id"] for t in tests if t["rejected"]]
    return {
        "correction": "Holm (step-down Bonferroni) over all tests; family-wise error rate alpha",
        "alpha": alpha,
        "tests": m,
        "bonferroni_level": level,
        "rejected": rejected,
        "pass": not rejected,
        "text": (
            f"PASS: none of the {m} tests rejects at a family-wise level of {alpha} (Holm)."
            if not rejected
            else f"FAIL: {len(rejected)} of {m} tests reject at a family-wise level of {alpha} (Holm): "
            + ", ".join(rejected)
        ),
    }


def _power(test: dict[str, Any], level: float, power: float) -> dict[str, Any] | None:
    """The smallest effect the test detects with probability ``power`` at ``level`` (a p-value below
    alpha / m is rejected by Holm whatever the other tests give)."""
    if test["kind"] == "chi-square" and test["df"]:
        observations = _observations(test)
        scale = test.get("scale", 1.0)
        w = stats.detectable_w(observations, test["df"], level, power) / math.sqrt(scale)
        out: dict[str, Any] = {"cohen_w": w, "observations": observations, "level": level, "power": power}
        if test["id"].startswith("first-card/"):
            out["one_type_excess"] = w * math.sqrt(TYPES - 1)  # one type (1 + x)/52, the rest even
        return out
    if test["kind"] == "z":
        z_level = _normal_isf(level / 2) + _normal_isf(1 - power)
        return {"z_shift": z_level, "level": level, "power": power}
    return None


def _observations(test: dict[str, Any]) -> int:
    n: int = test["shoes"]
    if test["id"].startswith("serial-first/"):
        return n // 2
    return n


def _normal_isf(p: float) -> float:
    low, high = -40.0, 40.0
    for _ in range(200):
        mid = (low + high) / 2
        if stats.normal_sf(mid) > p:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def check_values(report_seed: str, decks: int, shoes: int) -> list[dict[str, Any]]:
    """The server seed, order text digest (docs/shuffle.md section 9) and first cards of a few shoes."""
    from pokdeng_core.shuffle import shuffled_deck

    out = []
    for index in sorted({0, 1, shoes - 1}):
        seed = schedule.server_seed(report_seed, index)
        cards = shuffled_deck(seed, schedule.client_seed(decks), index, decks)
        out.append(
            {
                "shoe": index,
                "server_seed_hex": seed.hex(),
                "client_seed": schedule.client_seed(decks),
                "nonce": index,
                "order_sha256": order_digest(cards),
                "first_cards": " ".join(str(c) for c in cards[:8]),
            }
        )
    return out


def build_rng_report(
    params: RngParameters,
    *,
    shuffler: Shuffler = scheduled_orders,
    battery_results: Callable[[], list[BatteryResult]] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> tuple[dict[str, Any], dict[int, Tallies]]:
    """The report (JSON-ready) and the tallies it was computed from.

    ``battery_results`` runs the battery (the CLI passes ``battery.run_battery`` bound to its tests);
    ``progress(stage, done, total)`` reports the shoes as they are counted."""
    started = time.perf_counter()
    timings: dict[str, float] = {}
    runs, tests = _counted(params, shuffler, progress, timings)
    battery: list[BatteryResult] = []
    if battery_results is not None:
        t0 = time.perf_counter()
        battery = battery_results()
        timings["battery"] = time.perf_counter() - t0
        tests += battery_tests(battery)
    overall = verdict(tests, params.alpha, params.power)
    timings["total"] = time.perf_counter() - started
    report = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "generator": f"pokdeng {__version__}",
        "algorithm": SHUFFLE_ALGORITHM,
        "parameters": {
            "report_seed": params.report_seed,
            "shoes": {str(d): n for d, n in sorted(params.shoes.items())},
            "alpha": params.alpha,
            "power": params.power,
            "battery": params.battery,
            "workers": params.workers,
        },
        "schedule": schedule_text(params.report_seed),
        "verdict": overall,
        "tests": tests,
        "runs": {str(d): run_summary(t, params.report_seed) for d, t in sorted(runs.items())},
        "battery": [_battery_result(r) for r in battery],
        "timings_seconds": timings,
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
    }
    return report, runs


def _counted(
    params: RngParameters,
    shuffler: Shuffler,
    progress: Callable[[str, int, int], None] | None,
    timings: dict[str, float],
) -> tuple[dict[int, Tallies], list[dict[str, Any]]]:
    """Each deck count's shoes counted (their seconds and rate in ``timings``), and the tests of their tallies."""
    runs: dict[int, Tallies] = {}
    tests: list[dict[str, Any]] = []
    for decks, shoes in sorted(params.shoes.items()):
        t0 = time.perf_counter()
        stage = f"{decks}-deck shoes"
        runs[decks] = run_shoes(
            params.report_seed,
            decks,
            shoes,
            workers=params.workers,
            shuffler=shuffler,
            progress=None if progress is None else _stage(progress, stage, shoes),
        )
        seconds = time.perf_counter() - t0
        timings[f"{decks}-deck"] = seconds
        for test in shoe_tests(runs[decks]):
            test["shoes"] = shoes
            tests.append(test)
        timings[f"{decks}-deck shoes per second"] = shoes / seconds
    return runs, tests


def _battery_result(r: BatteryResult) -> dict[str, Any]:
    """One dieharder test's result, as the report lists it."""
    return {
        "test": r.test,
        "command": r.command,
        "ntup": r.ntup,
        "tsamples": r.tsamples,
        "psamples": r.psamples,
        "pvalue": r.pvalue,
        "assessment": r.assessment,
        "stream_bytes_written": r.stream_bytes,
    }


def _stage(progress: Callable[[str, int, int], None], stage: str, total: int) -> Callable[[int], None]:
    return lambda done: progress(stage, done, total)


def schedule_text(report_seed: str) -> dict[str, str]:
    return {
        "server_seed": "SHA-256( UTF-8(report_seed) || shoe index as 8 bytes, unsigned big-endian )",
        "client_seed": "the ASCII text pokdeng-certification/D-deck, D the shoe's deck count (1 or 8)",
        "nonce": "the shoe index (0, 1, 2, ...)",
        "shuffle": f"{SHUFFLE_ALGORITHM}: docs/shuffle.md sections 1 to 6",
        "card_type": "canonical index mod 52: suit 'SHCD'[t // 13], rank 'A 2 .. 10 J Q K'[t % 13]",
        "battery_stream": (
            "for shoe index i = 0, 1, 2, ...: blocks 0 .. 51 (1,664 bytes) of the HMAC stream of the 8-deck "
            "shoe i above, concatenated; every dieharder test reads it from its first byte"
        ),
        "report_seed_sha256": hashlib.sha256(report_seed.encode("utf-8")).hexdigest(),
    }


def run_summary(t: Tallies, report_seed: str) -> dict[str, Any]:
    """The tallies themselves (a lab that counts the same shoes gets the same integers) and check values."""
    deck = canonical_deck(1)
    return {
        "decks": t.decks,
        "shoes": t.shoes,
        "types": [str(card) for card in deck],
        "positions": t.positions.tolist(),
        "first_card": t.positions[:, 0].tolist(),
        "player_hands": t.player_hands.tolist(),
        "banker_hands": t.banker_hands.tolist(),
        "first_pairs": t.first_pairs.tolist(),
        "matches": t.matches.tolist(),
        "colour_runs": t.colour_runs.tolist(),
        "first_types_sha256": hashlib.sha256(t.first_types.tobytes()).hexdigest(),
        "rejected_shoes": t.rejected,
        "check_values": check_values(report_seed, t.decks, t.shoes),
    }


def battery_tests_of(mode: str) -> tuple[BatteryTest, ...]:
    from pokdeng_service.certification.battery import FULL, QUICK

    return {"quick": QUICK, "full": FULL, "none": ()}[mode]
