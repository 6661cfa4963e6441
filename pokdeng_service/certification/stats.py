"""The distributions and tests of the reports, by hand (no scipy): the tests compare them with scipy.

* ``chi2_sf(x, df)``: P(chi-square(df) > x), the regularized upper incomplete gamma Q(df/2, x/2)
  (series below a + 1, Lentz's continued fraction above: Numerical Recipes 6.2), in float64;
* ``normal_sf``, ``binomial_two_sided`` (normal approximation with continuity correction);
* ``ks_uniform``: the Kolmogorov-Smirnov test of p-values against U(0, 1) (Stephens' correction);
* ``holm``: Holm's step-down adjusted p-values (family-wise error at most alpha, any dependence);
* ``ncx2_sf`` / ``detectable_w``: the power of a chi-square test (the non-central chi-square as a Poisson
  mixture of central ones), and the smallest effect (Cohen's w) it detects with a given power;
* ``runs_distribution``: the exact law of the number of runs of a random arrangement of n1 + n2 items.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

__all__ = (
    "ChiSquare",
    "binomial_two_sided",
    "chi2_isf",
    "chi2_sf",
    "chi_square",
    "detectable_w",
    "holm",
    "ks_uniform",
    "ncx2_sf",
    "normal_sf",
    "runs_distribution",
)

_EPS = 1e-15
_TINY = 1e-300


def _gamma_series(a: float, x: float) -> float:
    """P(a, x) by its series (x < a + 1)."""
    term = total = 1.0 / a
    ap = a
    for _ in range(1_000_000):
        ap += 1.0
        term *= x / ap
        total += term
        if abs(term) < abs(total) * _EPS:
            break
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def _gamma_fraction(a: float, x: float) -> float:
    """Q(a, x) by its continued fraction (x >= a + 1), modified Lentz."""
    b = x + 1.0 - a
    c = 1.0 / _TINY
    d = 1.0 / b
    h = d
    for i in range(1, 1_000_000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = _TINY if abs(d) < _TINY else d
        c = b + an / c
        c = _TINY if abs(c) < _TINY else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    return math.exp(-x + a * math.log(x) - math.lgamma(a)) * h


def gamma_q(a: float, x: float) -> float:
    """The regularized upper incomplete gamma function Q(a, x)."""
    if x <= 0:
        return 1.0
    if x < a + 1.0:
        return max(0.0, 1.0 - _gamma_series(a, x))
    return _gamma_fraction(a, x)


def gamma_p(a: float, x: float) -> float:
    if x <= 0:
        return 0.0
    if x < a + 1.0:
        return _gamma_series(a, x)
    return max(0.0, 1.0 - _gamma_fraction(a, x))


def chi2_sf(x: float, df: float) -> float:
    """P(X > x) for X chi-square with ``df`` degrees of freedom."""
    return gamma_q(df / 2.0, x / 2.0)


def chi2_cdf(x: float, df: float) -> float:
    return gamma_p(df / 2.0, x / 2.0)


def chi2_isf(p: float, df: float) -> float:
    """The x with ``chi2_sf(x, df) == p`` (bisection on the log scale of p: 1e-12 relative)."""
    low, high = 0.0, max(1.0, df)
    while chi2_sf(high, df) > p:
        high *= 2.0
    for _ in range(200):
        mid = (low + high) / 2.0
        if chi2_sf(mid, df) > p:
            low = mid
        else:
            high = mid
        if high - low <= 1e-12 * high:
            break
    return (low + high) / 2.0


def ncx2_sf(x: float, df: float, nc: float) -> float:
    """P(X > x) for X non-central chi-square(df, nc): sum_j Poisson(j; nc/2) * Q(df/2 + j, x/2), the Poisson
    mass within 10 standard deviations of its mean, each Q from the last by Q(a + 1, y) = Q(a, y) +
    y^a e^-y / Gamma(a + 1)."""
    if nc <= 0:
        return chi2_sf(x, df)
    if x <= 0:
        return 1.0
    lam, a, y = nc / 2.0, df / 2.0, x / 2.0
    spread = 10.0 * math.sqrt(lam) + 10.0
    first, last = max(0, int(lam - spread)), int(lam + spread) + 1
    q = gamma_q(a + first, y)
    total = 0.0
    log_y, log_lam = math.log(y), math.log(lam)
    for j in range(first, last + 1):
        total += math.exp(-lam + j * log_lam - math.lgamma(j + 1)) * q
        q += math.exp((a + j) * log_y - y - math.lgamma(a + j + 1))
    return min(1.0, max(0.0, total))


def detectable_w(shoes: int, df: int, alpha: float, power: float) -> float:
    """The smallest Cohen's w = sqrt(sum (p1 - p0)^2 / p0) that a chi-square test of ``df`` degrees of
    freedom on ``shoes`` observations rejects at level ``alpha`` with probability ``power``
    (non-centrality ``shoes * w^2``)."""
    critical = chi2_isf(alpha, df)
    low, high = 0.0, 1.0
    while ncx2_sf(critical, df, high) < power:
        high *= 2.0
    for _ in range(60):
        mid = (low + high) / 2.0
        if ncx2_sf(critical, df, mid) < power:
            low = mid
        else:
            high = mid
    return math.sqrt(high / shoes)


def normal_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def binomial_two_sided(k: int, n: int, p: float = 0.5) -> tuple[float, float]:
    """(z, two-sided p) of ``k`` successes in ``n`` Bernoulli(p) trials: normal approximation with
    continuity correction (n large)."""
    mean, sd = n * p, math.sqrt(n * p * (1 - p))
    z = (k - mean) / sd
    corrected = max(0.0, abs(k - mean) - 0.5) / sd
    return z, min(1.0, 2.0 * normal_sf(corrected))


def ks_uniform(pvalues: Sequence[float]) -> tuple[float, float]:
    """(D, p) of the Kolmogorov-Smirnov test of ``pvalues`` against U(0, 1).

    D = max |F_n(x) - x|; p from the Kolmogorov distribution at (sqrt(n) + 0.12 + 0.11 / sqrt(n)) D
    (Stephens 1970)."""
    values = sorted(pvalues)
    n = len(values)
    if n == 0:
        return 0.0, 1.0
    d = max(max((i + 1) / n - v, v - i / n) for i, v in enumerate(values))
    t = (math.sqrt(n) + 0.12 + 0.11 / math.sqrt(n)) * d
    if t < 0.2:
        return d, 1.0
    total = 0.0
    for k in range(1, 101):
        term = 2.0 * (-1) ** (k - 1) * math.exp(-2.0 * k * k * t * t)
        total += term
        if abs(term) < 1e-16:
            break
    return d, min(1.0, max(0.0, total))


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's adjusted p-values, in the given order: the i-th smallest of m is multiplied by m - i + 1,
    then made non-decreasing (a running maximum) and capped at 1. Rejecting where the adjusted p-value
    is below alpha keeps the family-wise error rate at most alpha, whatever the tests' dependence."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


@dataclass(frozen=True, slots=True)
class ChiSquare:
    """A chi-square statistic with its degrees of freedom and p-value."""

    statistic: float
    df: int
    pvalue: float
    cells: int
    min_expected: float


def chi_square(
    observed: Sequence[float],
    expected: Sequence[float],
    *,
    scale: float = 1.0,
    df: int | None = None,
    pool: float = 0.0,
) -> ChiSquare:
    """Pearson's sum (O - E)^2 / E times ``scale``, with ``df`` (default: cells - 1) degrees of freedom.

    ``pool``: first merge neighbouring cells until every expected count reaches it (for distributions with
    thin tails, such as the number of runs)."""
    obs, exp = list(map(float, observed)), list(map(float, expected))
    if pool > 0:
        obs, exp = _pooled(obs, exp, pool)
    statistic = scale * sum((o - e) ** 2 / e for o, e in zip(obs, exp, strict=True) if e > 0)
    dof = len(obs) - 1 if df is None else df
    return ChiSquare(statistic, dof, chi2_sf(statistic, dof), len(obs), min(exp))


def _pooled(obs: list[float], exp: list[float], least: float) -> tuple[list[float], list[float]]:
    """Cells with no expectation dropped; then, while a cell expects less than ``least``, the smallest is
    merged into its smaller neighbour (cells stay contiguous ranges)."""
    keep = [i for i, e in enumerate(exp) if e > 0]
    obs, exp = [obs[i] for i in keep], [exp[i] for i in keep]
    while len(exp) > 2 and min(exp) < least:
        i = exp.index(min(exp))
        j = i + 1 if i == 0 or (i + 1 < len(exp) and exp[i + 1] < exp[i - 1]) else i - 1
        low, high = min(i, j), max(i, j)
        exp[low : high + 1] = [exp[low] + exp[high]]
        obs[low : high + 1] = [obs[low] + obs[high]]
    return obs, exp


def runs_distribution(n1: int, n2: int) -> list[Fraction]:
    """P(R = r) for r = 0 .. n1 + n2, R the number of runs in a uniformly random arrangement of ``n1``
    items of one kind and ``n2`` of another (n1, n2 >= 1):
    P(R = 2k) = 2 C(n1-1, k-1) C(n2-1, k-1) / C(n, n1) and
    P(R = 2k+1) = (C(n1-1, k) C(n2-1, k-1) + C(n1-1, k-1) C(n2-1, k)) / C(n, n1)."""
    n = n1 + n2
    total = math.comb(n, n1)
    out = [Fraction(0)] * (n + 1)
    for r in range(2, n + 1):
        k = r // 2
        if r % 2 == 0:
            ways = 2 * math.comb(n1 - 1, k - 1) * math.comb(n2 - 1, k - 1)
        else:
            ways = math.comb(n1 - 1, k) * math.comb(n2 - 1, k - 1) + math.comb(n1 - 1, k - 1) * math.comb(n2 - 1, k)
        out[r] = Fraction(ways, total)
    return out
