"""``pokdeng rtp`` and ``pokdeng simulate``: the game math of pokdeng_core.gamemath on the command line.

The ``pokdeng`` CLI registers these with ``add_rtp_commands(subparsers)``; each parser gets a
``handler`` default (``handler(args) -> exit code``). Standalone::

    python -m pokdeng_service.cli_rtp rtp classic --strategy best
    python -m pokdeng_service.cli_rtp simulate kingmaker --rounds 20000 --seed 7
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pokdeng_core.catalog import PROFILE_NAMES

if TYPE_CHECKING:  # (the game math, numpy and rich are loaded by the commands: the parser needs none of them)
    from fractions import Fraction

    from rich.table import Table

    from pokdeng_core.profiles import Profile
    from pokdeng_core.rtp_results import RtpResult, SimulationResult
    from pokdeng_service.cli.console import Console

__all__ = ["add_rtp_commands", "main", "run_rtp", "run_simulate"]

DEFAULT_ROUNDS = 10_000


def add_rtp_commands(subparsers: Any) -> None:
    """Register ``rtp`` and ``simulate`` on an argparse subparsers object (from ``add_subparsers``)."""
    rtp = subparsers.add_parser(
        "rtp",
        help="exact return to player of a profile (complete enumeration)",
        description="Exact return to player, house edge, win/tie/loss, SD and hand-type probabilities "
        "of one hand against the banker, by complete enumeration of the deck (docs/game-math.md).",
    )
    _common(rtp)
    rtp.add_argument(
        "--stake",
        type=_stake,
        default=None,
        help="settle at this stake in minor units, with its floor/ceil rounding (default: exact multipliers)",
    )
    rtp.set_defaults(handler=run_rtp)

    sim = subparsers.add_parser(
        "simulate",
        help="Monte Carlo estimate through the round state machine, with 95%% intervals",
        description="Play whole rounds through the round state machine on seeded shuffles "
        "(server seed of round i = sha256(seed || i)) and compare with the exact figures.",
    )
    _common(sim)
    sim.add_argument(
        "--rounds", type=_positive, default=DEFAULT_ROUNDS, help=f"rounds to play (default {DEFAULT_ROUNDS})"
    )
    sim.add_argument("--seed", default=None, help="simulation seed (default: a random one, printed)")
    sim.set_defaults(handler=run_simulate)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("profile", choices=PROFILE_NAMES, help="rule profile")
    parser.add_argument(
        "--strategy",
        choices=("reference", "best"),
        default="reference",
        help="reference: the documented strategy; best: the player's best fixed strategy per two-card total",
    )
    parser.add_argument("--straights", action="store_true", help="classic only: count straights (table option)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")


def _stake(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("a stake is at least 1 minor unit")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 2:
        raise argparse.ArgumentTypeError("at least 2 rounds")
    return value


def _profile(args: argparse.Namespace) -> Profile:
    from pokdeng_core.profiles import get_profile

    options = {"straights": True} if args.straights else {}
    return get_profile(args.profile, **options)


def _console() -> Console:
    from pokdeng_service.cli.console import Console

    return Console(highlight=False, markup=False)


# ---------------------------------------------------------------------------------------
# rtp


def run_rtp(args: argparse.Namespace) -> int:
    from pokdeng_core.gamemath import exact
    from pokdeng_core.profiles import ProfileError

    try:
        profile = _profile(args)
        started = time.perf_counter()
        result = exact(profile, args.strategy, stake=args.stake)
        seconds = time.perf_counter() - started
    except (ProfileError, ValueError) as error:
        print(f"pokdeng rtp: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({**result.to_dict(), "seconds": round(seconds, 3)}, indent=2))
        return 0
    print_rtp(result, seconds, _console())
    return 0


def _pct(value: Fraction | float) -> str:
    return f"{float(value) * 100:.4f}%"


def _dec(value: Fraction | float, places: int = 6) -> str:
    return f"{float(value):+.{places}f}"


def print_rtp(result: RtpResult, seconds: float, console: Console) -> None:
    stake = "exact multipliers" if result.stake is None else f"stake {result.stake} minor units, rounded"
    console.print(f"{result.profile} - {result.strategy.name} strategy ({stake})", style="bold")
    console.print(f"Strategy: {result.strategy_text}")
    console.print(_return_table(result))
    console.print(_hand_types_table(result))
    if result.decisions:
        console.print(_decisions_table(result))
    notes = _notes_table(result)
    if notes.row_count:
        console.print(notes)
    console.print(f"{result.deals:,} equally likely deals enumerated; {result.method}.")
    console.print(f"Computed in {seconds:.2f} s.")


def _figures_table(title: str, first: str, second: str) -> Table:
    """A table of figures: its name, its decimal (right-aligned) and its exact value (folded when long)."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column(first)
    table.add_column(second, justify="right")
    table.add_column("exact", overflow="fold")
    return table


def _return_table(result: RtpResult) -> Table:
    """RTP, house edge, win, tie, loss, the variance and SD of the net: decimal and exact."""
    table = _figures_table("Return to player, per unit staked", "figure", "decimal")
    rows: list[tuple[str, Fraction, str]] = [
        ("RTP", result.rtp, _pct(result.rtp)),
        ("house edge", result.house_edge, _pct(result.house_edge)),
        ("win", result.win, _pct(result.win)),
        ("tie", result.tie, _pct(result.tie)),
        ("loss", result.loss, _pct(result.loss)),
        ("variance of net", result.variance, f"{float(result.variance):.6f}"),
    ]
    for name, value, shown in rows:
        table.add_row(name, shown, str(value))
    table.add_row("SD of net", f"{result.sd:.6f}", "sqrt(variance)")
    return table


def _hand_types_table(result: RtpResult) -> Table:
    """The probability of each type of the player's final hand."""
    table = _figures_table("Player's final hand", "hand type", "probability")
    for name, p in result.hand_types:
        table.add_row(name, _pct(p), str(p))
    return table


def _decisions_table(result: RtpResult) -> Table:
    """Against a banker without pok, by two-card total: the rule, how often, the EVs of standing and drawing, the
    best choice and the strategy's."""
    from rich.table import Table

    decisions = Table(
        title="Player's decisions (banker has no pok): E[net per unit] by two-card total", title_justify="left"
    )
    for column in ("total", "rule", "P(situation)", "EV stand", "EV draw", "best", "this strategy"):
        decisions.add_column(column, justify="right" if column != "rule" else "left")
    for d in result.decisions:
        decisions.add_row(
            str(d.total), d.rule, _pct(d.probability), _dec(d.ev_stand), _dec(d.ev_draw), d.best, d.chosen
        )
    return decisions


def _notes_table(result: RtpResult) -> Table:
    """The profile's own figures (its side bet, its commissions, its ante): empty if it has none."""
    table = _figures_table("Profile notes", "figure", "decimal")
    for row in (*_side_bet_notes(result), *_commission_notes(result), *_ante_notes(result)):
        table.add_row(*row)
    return table


def _side_bet_notes(result: RtpResult) -> list[tuple[str, str, str]]:
    if result.side_bet is None:
        return []
    s = result.side_bet
    return [
        ("side bet offered (up card 8 or 9)", _pct(s.offer_probability), str(s.offer_probability)),
        ("P(banker natural | offered)", _pct(s.natural_probability), str(s.natural_probability)),
        (f"side bet RTP (wins {s.payout} : 1)", _pct(s.rtp), str(s.rtp)),
        ("side bet house edge", _pct(s.house_edge), str(s.house_edge)),
        ("side bet RTP, best case knowing own cards", _pct(s.best_conditional_rtp), str(s.best_conditional_rtp)),
    ]


def _commission_notes(result: RtpResult) -> list[tuple[str, str, str]]:
    if result.commission is None:
        return []
    m = result.commission
    return [
        ("RTP before the player's commission", _pct(m.rtp_before_commission), str(m.rtp_before_commission)),
        (f"player's commission ({m.player_rate} of a win)", _pct(m.player_commission), str(m.player_commission)),
        (
            f"banker's commission ({m.banker_rate} of its net gain), one player",
            _pct(m.banker_commission),
            str(m.banker_commission),
        ),
    ]


def _ante_notes(result: RtpResult) -> list[tuple[str, str, str]]:
    if result.ante is None:
        return []
    a = result.ante
    return [
        ("E[ante net] per unit of ante", _dec(a.ante_ev), str(a.ante_ev)),
        ("E[bet net] per unit of bet", _dec(a.bet_ev), str(a.bet_ev)),
        ("house edge per ante (wager = 2 antes)", _pct(a.edge_per_ante), str(a.edge_per_ante)),
        ("bet won / pushed / lost", f"{_pct(a.bet_won)} / {_pct(a.bet_push)} / {_pct(a.bet_lost)}", ""),
    ]


# ---------------------------------------------------------------------------------------
# simulate


def run_simulate(args: argparse.Namespace) -> int:
    import secrets

    from pokdeng_core.gamemath import exact
    from pokdeng_core.profiles import ProfileError
    from pokdeng_service.cli.console import Console

    seed = args.seed if args.seed is not None else secrets.token_hex(8)
    try:
        profile = _profile(args)
    except ProfileError as error:
        print(f"pokdeng simulate: {error}", file=sys.stderr)
        return 2
    errors = Console(stderr=True, highlight=False, markup=False)
    errors.print(f"seed: {seed}")
    result, seconds = _simulated(profile, args.rounds, seed, args.strategy, errors)
    reference = exact(profile, result.strategy)
    if args.json:
        out = {
            **result.to_dict(),
            "seconds": round(seconds, 3),
            "rounds_per_second": round(args.rounds / seconds, 1),
            "exact_rtp": float(reference.rtp),
        }
        print(json.dumps(out, indent=2))
        return 0
    print_simulation(result, reference, seconds, _console())
    return 0


def _simulated(
    profile: Profile, rounds: int, seed: str, strategy: str, errors: Console
) -> tuple[SimulationResult, float]:
    """The simulation's result and the seconds it took, with a progress bar on ``errors`` while it runs."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from pokdeng_core.rtp_simulation import simulate

    progress = Progress(
        TextColumn(f"simulating {profile.key}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=errors,
        transient=True,
    )
    with progress:
        task = progress.add_task("rounds", total=rounds)
        started = time.perf_counter()
        result = simulate(profile, rounds, seed, strategy, progress=lambda done: progress.update(task, completed=done))
        seconds = time.perf_counter() - started
    return result, seconds


def print_simulation(result: SimulationResult, reference: RtpResult, seconds: float, console: Console) -> None:
    from rich.table import Table

    console.print(f"{result.profile} - {result.strategy.name} strategy, simulated through the machine", style="bold")
    console.print(f"Strategy: {result.strategy_text}")
    console.print(
        f"seed: {result.seed}   rounds: {result.rounds:,}   stake: {result.stake} minor units   "
        f"({result.rounds / seconds:,.0f} rounds/s, {seconds:.1f} s)"
    )
    table = Table(title="Simulated figures with 95% confidence intervals", title_justify="left")
    for column in ("figure", "estimate", "95% interval", "exact", "z"):
        table.add_column(column, justify="left" if column == "figure" else "right")

    def row(name: str, est: Any, exact_value: Fraction | None) -> None:
        z = "" if exact_value is None or not est.se else f"{(est.value - float(exact_value)) / est.se:+.2f}"
        table.add_row(
            name,
            _pct(est.value),
            f"{_pct(est.low)} .. {_pct(est.high)}",
            "" if exact_value is None else _pct(exact_value),
            z,
        )

    row("RTP", result.rtp, reference.rtp)
    row("house edge", result.house_edge, reference.house_edge)
    row("win", result.win, reference.win)
    row("tie", result.tie, reference.tie)
    row("loss", result.loss, reference.loss)
    exact_types = dict(reference.hand_types)
    for name, est in result.hand_types:
        row(f"hand: {name}", est, exact_types.get(name))
    if result.side_bet_rtp is not None:
        side = reference.side_bet.rtp if reference.side_bet is not None else None
        row(f"side bet RTP ({result.side_bets:,} bets)", result.side_bet_rtp, side)
    console.print(table)
    console.print(f"SD of a unit bet's net: {result.sd:.4f} (exact {reference.sd:.4f})")


# ---------------------------------------------------------------------------------------
# standalone


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pokdeng", description="Pok Deng game math")
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_rtp_commands(subparsers)
    args = parser.parse_args(argv)
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
