"""The reports as files: JSON, printable HTML (Jinja2, one self-contained file) and PNG plots (matplotlib).

matplotlib is the optional extra ``report`` (``pip install 'pokdeng[report]'``): ``plots_available`` says
whether it is installed, and ``MISSING_PLOTS`` how to install it.
"""

from __future__ import annotations

import base64
import importlib.util
import io
import json
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from jinja2 import Environment

from pokdeng_service.certification import stats
from pokdeng_service.certification.tallies import TYPES, Tallies
from pokdeng_service.templating import environment

__all__ = (
    "MISSING_PLOTS",
    "math_html",
    "plots_available",
    "positions_png",
    "pvalues_png",
    "rng_html",
    "write_json",
)

MISSING_PLOTS = (
    "the plots need matplotlib, which is not installed: pip install 'pokdeng[report]' "
    "(or pip install matplotlib), or pass --no-plots"
)


def plots_available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def write_json(report: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(report, indent=1, sort_keys=False) + "\n", encoding="utf-8")


@cache
def _environment() -> Environment:
    filters: dict[str, Callable[..., str]] = {
        "pct": lambda x, places=4: "" if x is None else f"{float(x) * 100:.{places}f}%",
        "num": lambda x, places=4: "" if x is None else f"{float(x):.{places}f}",
        "pval": _pval,
    }
    return environment("pokdeng_service.certification", filters)


def _pval(p: float | None) -> str:
    if p is None:
        return ""
    return f"{p:.3e}" if p < 1e-4 else f"{p:.4f}"


def _generated() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def rng_html(report: dict[str, Any], plots: dict[str, bytes]) -> str:
    template = _environment().get_template("rng-report.html.j2")
    images = {name: _data_uri(png) for name, png in plots.items()}
    return template.render(r=report, images=images, generated=_generated())


def math_html(report: dict[str, Any]) -> str:
    return _environment().get_template("math-report.html.j2").render(r=report, generated=_generated())


# --------------------------------------------------------------------------------------------- plots


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=110, layout="constrained")


def _png(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def positions_png(t: Tallies) -> bytes:
    """Position uniformity: the standardized residual of every (type, position) cell, and each position's
    chi-square (51 df) against its central 99% band."""
    n, size = t.shoes, t.size
    expected = n / TYPES
    residual = (t.positions - expected) / np.sqrt(expected * (1 - 1 / TYPES))
    per_position = ((t.positions - expected) ** 2 / expected).sum(axis=0)
    figure = _figure(11, 6.5)
    top, bottom = figure.subplots(2, 1, height_ratios=[3, 2])
    image = top.imshow(residual, aspect="auto", cmap="RdBu_r", vmin=-4, vmax=4, interpolation="nearest")
    top.set_title(
        f"{t.decks}-deck shoes: (observed - expected) / sd of every card type x position cell "
        f"({n:,} shoes, {expected:,.1f} expected per cell)"
    )
    top.set_xlabel("position in the shoe (0 = first card dealt)")
    top.set_ylabel("card type (AS .. KD)")
    top.set_yticks([0, 13, 26, 39], ["AS", "AH", "AC", "AD"])
    figure.colorbar(image, ax=top, label="standardized residual")
    bottom.plot(np.arange(size), per_position, lw=0.8, color="#333")
    low, high = stats.chi2_isf(0.995, TYPES - 1), stats.chi2_isf(0.005, TYPES - 1)
    bottom.axhline(TYPES - 1, color="#2a7", lw=1, label="expected (51)")
    bottom.axhline(low, color="#c33", lw=0.8, ls="--", label="central 99% of chi-square(51)")
    bottom.axhline(high, color="#c33", lw=0.8, ls="--")
    bottom.set_xlim(0, size - 1)
    bottom.set_xlabel("position")
    bottom.set_ylabel("chi-square of the position")
    bottom.legend(loc="upper right", fontsize=8)
    return _png(figure)


def pvalues_png(tests: list[dict[str, Any]]) -> bytes:
    """The p-values of the first-level tests: histogram against U(0, 1), and their uniform Q-Q plot."""
    values = sorted(t["pvalue"] for t in tests if t["kind"] != "ks")
    figure = _figure(10, 4)
    left, right = figure.subplots(1, 2)
    bins = 10
    left.hist(values, bins=bins, range=(0, 1), color="#69c", edgecolor="#246")
    left.axhline(len(values) / bins, color="#c33", lw=1, label="expected under U(0,1)")
    left.set_title(f"p-values of the {len(values)} tests")
    left.set_xlabel("p-value")
    left.set_ylabel("tests")
    left.legend(fontsize=8)
    k = len(values)
    uniform = [(i + 0.5) / k for i in range(k)]
    right.plot([0, 1], [0, 1], color="#c33", lw=1)
    right.plot(uniform, values, "o", ms=3, color="#246")
    right.set_title("uniform Q-Q plot")
    right.set_xlabel("expected quantile")
    right.set_ylabel("observed p-value")
    return _png(figure)
