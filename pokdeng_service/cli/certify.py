"""``pokdeng rng-report`` and ``pokdeng math-report``: certification evidence a test lab can file
(docs/certification.md).

The parser needs nothing heavy: each command imports ``pokdeng_service.certification`` (numpy, the game
math, Jinja2, matplotlib) when it runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pokdeng_core.catalog import PROFILE_NAMES

if TYPE_CHECKING:
    from pokdeng_service.certification.battery import BatteryResult, BatteryTest

__all__ = ("add_certification_commands", "run_math_report", "run_rng_report")

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
DEFAULT_SHOES = 1_000_000
DEFAULT_SEED = "pokdeng-certification"


def _count(text: str) -> int:
    value = int(text.replace("_", "").replace(",", ""))
    if value < 2:
        raise argparse.ArgumentTypeError("at least 2")
    return value


def _workers() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


def add_certification_commands(subparsers: Any) -> None:
    rng = subparsers.add_parser(
        "rng-report",
        help="statistics of the seeded shuffle over a documented seed schedule, a battery, HTML and JSON",
        description="Shuffle SHOES shoes of each deck count the profiles use (1 and 8) from the documented "
        "seed schedule, test them (every card x position cell, first cards, two-card hands, serial tests "
        "between shoes, runs), put the HMAC byte stream through dieharder, correct for the number of tests "
        "(Holm) and write the report (docs/certification.md). Exit 0: pass; 1: a test rejects.",
    )
    rng.add_argument("--seed", default=DEFAULT_SEED, help=f"the report seed (default {DEFAULT_SEED!r})")
    rng.add_argument(
        "--shoes", type=_count, default=DEFAULT_SHOES, help=f"shoes per deck count (default {DEFAULT_SHOES:,})"
    )
    rng.add_argument("--decks", default="1,8", help="deck counts, comma-separated (default 1,8)")
    rng.add_argument(
        "--battery",
        choices=("quick", "full", "none"),
        default="quick",
        help="dieharder: quick (its data-light tests, minutes), full (dieharder -a: every test, hours) or none",
    )
    rng.add_argument("--alpha", type=float, default=0.01, help="family-wise error rate, Holm (default 0.01)")
    rng.add_argument("--workers", type=int, default=None, help="processes (default: the CPUs, at most 8)")
    rng.add_argument("--out", default=".", help="folder to write rng-report.html/.json and the plots in (default .)")
    rng.add_argument("--no-plots", action="store_true", help="no plots (no matplotlib needed)")
    rng.add_argument(
        "--battery-stream",
        action="store_true",
        help="write the battery's raw byte stream to standard output instead (pipe it to any battery)",
    )
    rng.add_argument("--bytes", type=int, default=None, help="--battery-stream: stop after this many bytes")
    rng.set_defaults(handler=run_rng_report)

    math = subparsers.add_parser(
        "math-report",
        help="exact game math of a profile (every outcome, RTP per wager, hit frequency, SD) with a simulation",
        description="Exact probabilities of every outcome and hand class, RTP overall and per wager, hit "
        "frequency, SD per unit staked and house edge, for the reference and best strategies and each table "
        "option, beside a simulation through the round state machine with its confidence intervals.",
    )
    math.add_argument("profile", choices=PROFILE_NAMES, help="rule profile")
    math.add_argument("--straights", action="store_true", help="classic: only the variant with straights")
    math.add_argument(
        "--ace-low", action="store_true", help="classic: only straights with ace low (implies --straights)"
    )
    math.add_argument("--strategy", choices=("reference", "best", "both"), default="both", help="default both")
    math.add_argument("--rounds", type=int, default=20_000, help="simulated rounds per variant and strategy (0: none)")
    math.add_argument("--seed", default="pokdeng-math-report", help="simulation seed")
    math.add_argument("--workers", type=int, default=None, help="processes for the simulations (default: the CPUs)")
    math.add_argument("--out", default=".", help="folder to write math-report-PROFILE.html/.json in (default .)")
    math.set_defaults(handler=run_math_report)


def _folder(name: str) -> Path:
    path = Path(name)
    if not path.parent.is_dir():
        raise ValueError(f"cannot write in {name}: no such folder {path.parent}")
    if path.exists() and not path.is_dir():
        raise ValueError(f"cannot write in {name}: it is a file, not a folder")
    path.mkdir(exist_ok=True)
    return path


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_rng_report(args: argparse.Namespace) -> int:
    workers = args.workers or _workers()
    if args.battery_stream:
        from pokdeng_service.certification.battery import write_stream

        write_stream(args.seed, sys.stdout.buffer, workers=workers, limit=args.bytes)
        return EXIT_OK
    try:
        decks = _deck_counts(args.decks)
        out = _folder(args.out)
    except ValueError as error:
        print(f"pokdeng rng-report: {error}", file=sys.stderr)
        return EXIT_USAGE
    from pokdeng_service.certification import battery
    from pokdeng_service.certification.rng import RngParameters, battery_tests_of, build_rng_report

    missing = _missing_tool(args)
    if missing is not None:
        print(f"pokdeng rng-report: {missing}", file=sys.stderr)
        return EXIT_USAGE
    params = RngParameters(
        args.seed, {d: args.shoes for d in decks}, alpha=args.alpha, battery=args.battery, workers=workers
    )
    tests = battery_tests_of(args.battery)
    run_battery = _battery_run(args.seed, tests, workers, battery.dieharder_path()) if tests else None
    report, runs = build_rng_report(params, battery_results=run_battery, progress=_stage_progress())
    plots = _write_rng(report, runs, out, plots=not args.no_plots)
    _print_rng(report)
    print(f"wrote {out / 'rng-report.html'}, {out / 'rng-report.json'}" + (" and the plots" if plots else ""))
    return EXIT_OK if report["verdict"]["pass"] else EXIT_FAILED


def _deck_counts(text: str) -> list[int]:
    """``--decks``: deck counts, comma-separated, each 1 to 8 (else a ValueError), in order, each once."""
    decks = sorted({int(d) for d in text.split(",")})
    if not decks or any(not 1 <= d <= 8 for d in decks):
        raise ValueError("deck counts are 1 to 8")
    return decks


def _missing_tool(args: argparse.Namespace) -> str | None:
    """What the report asked for needs and this machine has not (matplotlib for the plots, dieharder for a
    battery), said; None if nothing is missing."""
    from pokdeng_service.certification import battery, render

    if not args.no_plots and not render.plots_available():
        return render.MISSING_PLOTS
    if args.battery != "none" and battery.dieharder_path() is None:
        return "dieharder is not installed (Debian: apt-get install dieharder), or pass --battery none"
    return None


def _battery_run(
    seed: str, tests: tuple[BatteryTest, ...], workers: int, program: str | None
) -> Callable[[], list[BatteryResult]]:
    """The battery's run, for the report to call: dieharder's ``tests``, each said on standard error as done."""
    from pokdeng_service.certification import battery

    def run_battery() -> list[BatteryResult]:
        _say(f"battery: dieharder, {len(tests)} tests")
        return battery.run_battery(
            seed,
            tests,
            workers=workers,
            dieharder=program,
            progress=lambda done, name: _say(f"  {done}/{len(tests)} {name}"),
        )

    return run_battery


def _stage_progress() -> Callable[[str, int, int], None]:
    """The report's progress on standard error: a stage's count at most every 5 seconds, and when it is done."""
    last = [0.0]

    def progress(stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - last[0] > 5:
            last[0] = now
            _say(f"{stage}: {done:,} / {total:,}")

    return progress


def _write_rng(report: dict[str, Any], runs: dict[int, Any], out: Path, plots: bool) -> dict[str, bytes]:
    """The report's plots (unless ``plots`` is false: none), its JSON and its HTML, written in ``out``: the
    plots."""
    from pokdeng_service.certification import render

    pngs: dict[str, bytes] = {}
    if plots:
        for d, tallies in runs.items():
            pngs[f"positions-{d}-deck"] = render.positions_png(tallies)
        pngs["pvalues"] = render.pvalues_png(report["tests"])
        for name, png in pngs.items():
            (out / f"rng-{name}.png").write_bytes(png)
    render.write_json(report, out / "rng-report.json")
    (out / "rng-report.html").write_text(render.rng_html(report, pngs), encoding="utf-8")
    return pngs


def _print_rng(report: dict[str, Any]) -> None:
    print(f"{'test':<64} {'statistic':>12} {'df':>6} {'p-value':>10} {'Holm p':>10}  verdict")
    for t in report["tests"]:
        name = t["title"] + (f" [{t['decks']}d]" if t["decks"] else "")
        df = "" if t["df"] is None else str(t["df"])
        print(
            f"{name[:64]:<64} {t['statistic']:>12.3f} {df:>6} {t['pvalue']:>10.4g} {t['holm_pvalue']:>10.4g}  "
            f"{'REJECT' if t['rejected'] else 'pass'}"
        )
    timings = report["timings_seconds"]
    rates = ", ".join(f"{k}: {v:,.0f}" for k, v in timings.items() if "per second" in k)
    print(f"times: {', '.join(f'{k} {v:.1f} s' for k, v in timings.items() if 'per second' not in k)}; {rates}")
    print(report["verdict"]["text"])


def run_math_report(args: argparse.Namespace) -> int:
    try:
        out = _folder(args.out)
        if args.profile != "classic" and (args.straights or args.ace_low):
            raise ValueError(f"profile {args.profile} takes no table option")
    except ValueError as error:
        print(f"pokdeng math-report: {error}", file=sys.stderr)
        return EXIT_USAGE
    from pokdeng_service.certification import render
    from pokdeng_service.certification.math import STRATEGIES, MathParameters, build_math_report

    options = None
    if args.straights or args.ace_low:
        options = tuple(sorted({"straights": True, **({"ace_low": True} if args.ace_low else {})}.items()))
    strategies = STRATEGIES if args.strategy == "both" else (args.strategy,)
    params = MathParameters(
        args.profile, options, strategies, max(0, args.rounds), args.seed, args.workers or _workers()
    )
    report = build_math_report(params, progress=_say)
    render.write_json(report, out / f"math-report-{args.profile}.json")
    (out / f"math-report-{args.profile}.html").write_text(render.math_html(report), encoding="utf-8")
    print(f"{'variant':<28} {'strategy':<10} {'RTP':>10} {'edge':>9} {'hit':>9} {'SD':>7}  simulated RTP (95%)")
    for v in report["variants"]:
        for s in v["strategies"]:
            e = s["exact"]
            sim = ""
            if "simulation" in s:
                f = s["simulation"]["figures"][0]
                sim = f"{f['estimate']:.2%} ({f['low']:.2%} .. {f['high']:.2%})"
            print(
                f"{v['key']:<28} {s['strategy']:<10} {e['rtp']['decimal']:>10.4%} {e['house_edge']['decimal']:>9.4%} "
                f"{e['hit_frequency']['decimal']:>9.4%} {e['sd']:>7.4f}  {sim}"
            )
    print(
        "every simulated figure inside its joint interval: "
        + ("yes" if report["simulations_all_inside_joint"] else "NO")
    )
    t = report["timings_seconds"]
    print(f"times: exact {t['exact']:.1f} s, simulation {t['simulation']:.1f} s, total {t['total']:.1f} s")
    print(f"wrote {out / f'math-report-{args.profile}.html'}, {out / f'math-report-{args.profile}.json'}")
    return EXIT_OK
