"""The RNG report: its statistics recomputed from a small run, a planted bias detected at the power it states,
its parameters and check values reproducible, and its files.

The tallies are recounted shoe by shoe from the reference shuffle (``deck_order_indices``); the statistics
are recomputed by hand and with scipy; the planted defect is a Fisher-Yates that draws ``byte mod n``
(the word's top byte, nothing rejected: a modulo bias), whose exact effect is computed below.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from itertools import pairwise, permutations
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from scipy import stats as scipy_stats  # type: ignore[import-untyped]

from pokdeng_core.cards import canonical_deck
from pokdeng_core.shuffle import deck_order_indices, order_digest, shuffled_deck
from pokdeng_service.certification import render, schedule, stats
from pokdeng_service.certification.fastshuffle import OrderMatrix, blocks_for, shoe_stream, stream_prefix
from pokdeng_service.certification.rng import (
    RngParameters,
    build_rng_report,
    hand_probabilities,
    match_moments,
    shoe_tests,
)
from pokdeng_service.certification.tallies import RED, Tallies, run_shoes

SEED = "tests"


def _reference_types(decks: int, shoes: int, seed: str = SEED) -> list[list[int]]:
    client = schedule.client_seed(decks)
    return [[i % 52 for i in deck_order_indices(schedule.server_seed(seed, s), client, s, decks)] for s in range(shoes)]


@pytest.fixture(scope="module", params=[(1, 1200), (8, 300)], ids=["1-deck", "8-deck"])
def run(request: pytest.FixtureRequest) -> tuple[Tallies, list[list[int]]]:
    decks, shoes = request.param
    return run_shoes(SEED, decks, shoes), _reference_types(decks, shoes)


def test_the_tallies_recounted_shoe_by_shoe(run: tuple[Tallies, list[list[int]]]) -> None:
    t, shoes = run
    size = t.size
    positions = np.zeros((52, size), dtype=np.int64)
    for types in shoes:
        positions[types, range(size)] += 1
    assert (t.positions == positions).all()
    assert _pairs_equal(t.player_hands, [(s[0], s[2]) for s in shoes])
    assert _pairs_equal(t.banker_hands, [(s[1], s[3]) for s in shoes])
    pairs = [(shoes[2 * j], shoes[2 * j + 1]) for j in range(len(shoes) // 2)]
    assert _pairs_equal(t.first_pairs, [(a[0], b[0]) for a, b in pairs])
    matches = Counter(sum(x == y for x, y in zip(a, b, strict=True)) for a, b in pairs)
    assert {m: int(c) for m, c in enumerate(t.matches) if c} == dict(matches)
    runs = Counter(1 + sum(RED[a] != RED[b] for a, b in pairwise(s)) for s in shoes)
    assert {r: int(c) for r, c in enumerate(t.colour_runs) if c} == dict(runs)
    assert t.first_types.tolist() == [s[0] for s in shoes]


def _pairs_equal(table: npt.NDArray[np.int64], pairs: list[tuple[int, int]]) -> bool:
    counted = np.zeros((52, 52), dtype=np.int64)
    for a, b in pairs:
        counted[a, b] += 1
    return bool((table == counted).all())


def test_the_statistics_recomputed(run: tuple[Tallies, list[list[int]]]) -> None:
    t, shoes = run
    n, size, d = len(shoes), t.size, t.decks
    by_id = {test["id"].split("/")[0]: test for test in shoe_tests(t)}

    # every (type, position) cell: Pearson by hand, times (M - 1) / M, chi-square 51 (M - 1)
    e = n / 52
    raw = sum((c - e) ** 2 / e for row in t.positions.tolist() for c in row)
    positions = by_id["positions"]
    assert positions["statistic"] == pytest.approx(raw * (size - 1) / size, rel=1e-12)
    assert positions["df"] == 51 * (size - 1)
    assert positions["pvalue"] == pytest.approx(scipy_stats.chi2.sf(raw * (size - 1) / size, 51 * (size - 1)))

    first = scipy_stats.chisquare([Counter(s[0] for s in shoes).get(k, 0) for k in range(52)])
    assert by_id["first-card"]["statistic"] == pytest.approx(first.statistic)
    assert by_id["first-card"]["pvalue"] == pytest.approx(first.pvalue)

    pairs, probs = hand_probabilities(d)
    assert sum(probs) == pytest.approx(1.0, abs=1e-12)
    assert len(pairs) == (1326 if d == 1 else 1378)
    for who, (x, y) in (("player", (0, 2)), ("banker", (1, 3))):
        hands = Counter(tuple(sorted((s[x], s[y]))) for s in shoes)
        observed = [hands.get(p, 0) for p in pairs]
        expected = [n * p for p in probs]
        assert by_id[f"hands-{who}"]["statistic"] == pytest.approx(
            sum((o - e) ** 2 / e for o, e in zip(observed, expected, strict=True))
        )
        assert by_id[f"hands-{who}"]["pvalue"] == pytest.approx(
            scipy_stats.chisquare(observed, expected, sum_check=False).pvalue
        )

    half = n // 2
    firsts = Counter((shoes[2 * j][0], shoes[2 * j + 1][0]) for j in range(half))
    serial = scipy_stats.chisquare([firsts.get((a, b), 0) for a in range(52) for b in range(52)])
    assert by_id["serial-first"]["pvalue"] == pytest.approx(serial.pvalue)

    mean, variance = match_moments(d)
    agree = [sum(x == y for x, y in zip(shoes[2 * j], shoes[2 * j + 1], strict=True)) for j in range(half)]
    z = (sum(agree) / half - mean) / math.sqrt(variance / half)
    assert by_id["serial-matches"]["statistic"] == pytest.approx(z)
    assert by_id["serial-matches"]["pvalue"] == pytest.approx(2 * scipy_stats.norm.sf(abs(z)))

    colours = [int(RED[s[0]]) for s in shoes]
    changes = sum(a != b for a, b in pairwise(colours))
    assert by_id["runs-shoes"]["changes"] == changes
    z_changes = (changes - (n - 1) / 2) / math.sqrt((n - 1) / 4)
    assert by_id["runs-shoes"]["statistic"] == pytest.approx(z_changes)


def test_the_laws_used() -> None:
    # runs of a two-colour arrangement: against every arrangement of 4 + 3 items
    items = "RRRRBBB"
    counted = Counter(1 + sum(a != b for a, b in pairwise(p)) for p in set(permutations(items)))
    total = sum(counted.values())
    law = stats.runs_distribution(4, 3)
    assert {r: float(p) for r, p in enumerate(law) if p} == {r: c / total for r, c in counted.items()}
    # pooling: each merged cell a contiguous range, every cell then expecting at least 5 (the law of runs
    # alternates between odd and even counts, so a tail is not monotone)
    assert stats.chi_square([1, 2, 3, 4, 5], [1, 10, 1, 10, 1], pool=5).statistic == pytest.approx(
        (3 - 11) ** 2 / 11 + (12 - 12) ** 2 / 12
    )
    for n in (26, 208):
        law_n = [1e6 * float(p) for p in stats.runs_distribution(n, n)]
        pooled = stats.chi_square(law_n, law_n, pool=5.0)
        assert pooled.min_expected >= 5 and pooled.statistic == pytest.approx(0, abs=1e-9)
    big = stats.runs_distribution(208, 208)
    assert sum(big) == 1
    assert float(sum(r * p for r, p in enumerate(big))) == pytest.approx(1 + 2 * 208 * 208 / 416)
    # matches of two shoes: one deck, the fixed points of a random permutation (mean 1, variance 1)
    assert match_moments(1) == pytest.approx((1.0, 1.0))
    mean, variance = match_moments(2)  # two decks: against a direct simulation of 40,000 pairs
    rng = np.random.default_rng(1)
    shoe = np.arange(104) % 52
    a = rng.permuted(np.tile(shoe, (40_000, 1)), axis=1)
    b = rng.permuted(np.tile(shoe, (40_000, 1)), axis=1)
    agree = (a == b).sum(axis=1)
    assert agree.mean() == pytest.approx(mean, abs=0.03)
    assert agree.var() == pytest.approx(variance, rel=0.03)


def test_the_distributions_against_scipy() -> None:
    for df in (1, 7, 51, 1377, 2703, 21165):
        for p in (1e-12, 1e-6, 0.01, 0.5, 0.99):
            x = scipy_stats.chi2.isf(p, df)
            assert stats.chi2_sf(x, df) == pytest.approx(p, rel=1e-8)
            assert stats.chi2_isf(p, df) == pytest.approx(x, rel=1e-9)
        critical = scipy_stats.chi2.isf(0.001, df)
        for nc in (1.0, 50.0, 1000.0):
            assert stats.ncx2_sf(critical, df, nc) == pytest.approx(scipy_stats.ncx2.sf(critical, df, nc), abs=1e-9)
    rng = random.Random(2)
    values = [rng.random() ** 1.1 for _ in range(300)]
    d, p = stats.ks_uniform(values)
    reference = scipy_stats.kstest(values, "uniform")
    assert d == pytest.approx(reference.statistic)
    assert p == pytest.approx(reference.pvalue, abs=0.01)  # (asymptotic with Stephens' correction vs exact)


def test_holm_by_hand() -> None:
    p = [0.01, 0.04, 0.03, 0.5, 0.0001]
    # sorted: 0.0001 x5, 0.01 x4, 0.03 x3, 0.04 x2, 0.5 x1; running maximum
    assert stats.holm(p) == pytest.approx([0.04, 0.09, 0.09, 0.5, 0.0005])


# ---------------------------------------------------------------------------------------- a planted bias


def biased_orders(report_seed: str, decks: int, start: int, count: int, rejected: list[int]) -> OrderMatrix:
    """The schedule's shoes shuffled with a modulo bias: step n draws (top byte of the word) mod n."""
    size = 52 * decks
    client = schedule.client_seed(decks)
    seeds = schedule.server_seeds(report_seed, start, count)
    data = b"".join(
        shoe_stream(seed, stream_prefix(client, start + k), blocks_for(size)) for k, seed in enumerate(seeds)
    )
    words = np.frombuffer(data, dtype=">u4").reshape(count, -1)[:, : size - 1].astype(np.int64)
    draws = (words >> 24) % np.arange(size, 1, -1)
    order = np.tile(np.arange(size, dtype=np.int16), (count, 1))
    rows = np.arange(count)
    for k in range(size - 1):
        i, j = size - 1 - k, draws[:, k]
        held = order[rows, i].copy()
        order[rows, i] = order[rows, j]
        order[rows, j] = held
    return np.ascontiguousarray(order.T)


def biased_type_law(decks: int) -> npt.NDArray[np.float64]:
    """P(type t at position p) under the biased shuffle, exactly: each card's position law, step by step."""
    size = 52 * decks
    law = np.eye(size)  # law[card, position]
    for i in range(size - 1, 0, -1):
        n = i + 1
        q = np.bincount(np.arange(256) % n, minlength=n) / 256  # P(j) of the biased draw
        at_i = law[:, i].copy()
        moved = law[:, :i] * q[:i]  # a card at x < i goes to i when j = x
        law[:, i] = moved.sum(axis=1) + at_i * q[i]
        law[:, :i] = law[:, :i] - moved + at_i[:, None] * q[:i]  # the card at i goes to j
    types = np.zeros((52, size))
    for card in range(size):
        types[card % 52] += law[card]
    return types


def test_the_biased_shuffle_matches_its_exact_law() -> None:
    law = biased_type_law(1)
    assert np.allclose(law.sum(axis=0), 1) and np.allclose(law.sum(axis=1), 1)
    orders = biased_orders("law", 1, 0, 40_000, [])
    observed = np.zeros((52, 52))
    np.add.at(observed, (orders % 52, np.arange(52)[:, None]), 1)
    assert np.abs(observed / 40_000 - law).max() < 0.006  # (5 standard errors of a cell)


SHOES = {1: 8_000, 8: 2_000}


def test_a_planted_bias_is_detected_at_the_power_the_report_states() -> None:
    params = RngParameters("planted", SHOES, battery="none")
    report, _ = build_rng_report(params, shuffler=biased_orders)
    tests = {t["id"]: t for t in report["tests"]}
    assert not report["verdict"]["pass"]
    for decks in SHOES:
        test = tests[f"positions/{decks}-deck"]
        law = biased_type_law(decks)
        w = math.sqrt(52 * ((law - 1 / 52) ** 2).sum())  # the defect's effect on the card x position table
        stated = test["power"]
        assert stated["power"] == 0.9 and stated["level"] == report["verdict"]["bonferroni_level"]
        assert w > stated["cohen_w"], (decks, w, stated)  # the report says it detects this defect 9 times in 10
        assert test["rejected"], (decks, test)
    control, _ = build_rng_report(RngParameters("planted", SHOES, battery="none"))
    assert control["verdict"]["pass"], control["verdict"]


def test_the_stated_power_is_the_power() -> None:
    """At the sample size where the defect's first-card effect equals the stated detectable effect, the
    first-card test rejects at level alpha / m in about 90% of runs (400 runs drawn from the exact law)."""
    first = biased_type_law(1)[:, 0]
    w = math.sqrt(52 * ((first - 1 / 52) ** 2).sum())
    level = 0.01 / 17
    shoes = 60_000
    for _ in range(30):  # the shoes at which w is exactly the detectable effect
        shoes = int(shoes * (stats.detectable_w(shoes, 51, level, 0.9) / w) ** 2)
    assert stats.detectable_w(shoes, 51, level, 0.9) == pytest.approx(w, rel=1e-3)
    rng = np.random.default_rng(7)
    counts = rng.multinomial(shoes, first, size=400)
    e = shoes / 52
    statistic = ((counts - e) ** 2 / e).sum(axis=1)
    power = float((scipy_stats.chi2.sf(statistic, 51) < level).mean())
    assert 0.86 <= power <= 0.94, power  # (0.9 +- 2.7 standard errors of 400 runs)


# ---------------------------------------------------------------------------------------- the report


def test_the_report_is_reproducible_and_complete(tmp_path: Path) -> None:
    params = RngParameters("repro", {1: 2_000, 8: 400}, battery="none")
    report, runs = build_rng_report(params)
    again, _ = build_rng_report(RngParameters("repro", {1: 2_000, 8: 400}, battery="none", workers=2))
    assert again["runs"] == report["runs"]  # the processes do not change a count
    assert [t["pvalue"] for t in again["tests"]] == [t["pvalue"] for t in report["tests"]]
    json.dumps(report)
    assert report["parameters"]["shoes"] == {"1": 2_000, "8": 400}
    assert "SHA-256( UTF-8(report_seed) || shoe index" in report["schedule"]["server_seed"]
    for decks, run in report["runs"].items():
        for check in run["check_values"]:
            seed = schedule.server_seed("repro", check["shoe"])
            assert check["server_seed_hex"] == seed.hex()
            cards = shuffled_deck(seed, f"pokdeng-certification/{decks}-deck", check["shoe"], int(decks))
            assert check["order_sha256"] == order_digest(cards)
        assert run["types"] == [str(c) for c in canonical_deck(1)]
        assert sum(run["first_card"]) == run["shoes"]
    assert report["verdict"]["tests"] == len(report["tests"]) == 17
    assert all(t["holm_pvalue"] >= t["pvalue"] for t in report["tests"])
    plots = {"positions-1-deck": render.positions_png(runs[1]), "pvalues": render.pvalues_png(report["tests"])}
    assert all(png.startswith(b"\x89PNG") for png in plots.values())
    page = render.rng_html(report, plots)
    assert report["verdict"]["text"] in page and "data:image/png;base64," in page
    assert "pokdeng-certification/D-deck" in page


def test_a_lab_recounts_the_report_from_docs_shuffle_md_alone() -> None:
    """The reference implementation printed in docs/shuffle.md (section 11) and the schedule of
    docs/certification.md give the report's check values and tallies, integer for integer."""
    import hashlib
    import re

    docs = Path(__file__).resolve().parents[2] / "docs"
    (code,) = re.findall(r"```python reference\n(.*?)```", (docs / "shuffle.md").read_text(encoding="utf-8"), re.S)
    lab: dict[str, Any] = {}
    exec(code, lab)
    assert "pokdeng-certification/D-deck" in (docs / "certification.md").read_text(encoding="utf-8")
    report, _ = build_rng_report(RngParameters("lab", {1: 120, 8: 30}, battery="none"))
    for decks, shoes in ((1, 120), (8, 30)):
        positions = np.zeros((52, 52 * decks), dtype=np.int64)
        digests = {}
        for i in range(shoes):
            server_seed = hashlib.sha256(b"lab" + i.to_bytes(8, "big")).digest()
            cards = lab["shuffle"](server_seed, f"pokdeng-certification/{decks}-deck", i, decks)
            for p, card in enumerate(cards):
                positions[lab["DECK"].index(card), p] += 1
            digests[i] = hashlib.sha256(" ".join(cards).encode("ascii")).hexdigest()
        run = report["runs"][str(decks)]
        assert run["positions"] == positions.tolist()
        assert {c["shoe"]: c["order_sha256"] for c in run["check_values"]} == {
            c["shoe"]: digests[c["shoe"]] for c in run["check_values"]
        }
