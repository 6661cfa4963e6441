"""The read models checked against the record: every row they answer with, against a fold of the events.

The views (``readmodels``) are a cache of the event log in tables of their own, which a backup, a restore or an
edit of the database can change without touching a single event. ``verify_read_models`` folds the store's
notifications afresh (the same pure fold, into views in memory) up to the position the stored views say they
reached, then compares what each answers, query by query: every wallet's balance, reserved funds and version,
every wallet's statement, the tables directory, every closed round (newest first), every player's rounds, the
open rounds and the house's ledger. The first difference of each is named; ``pokdeng verify --all`` runs it for
each partition that has read models.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from pokdeng_service.audit.verdicts import Verdict
from pokdeng_service.readmodels.models import RoundSummary
from pokdeng_service.readmodels.runner import ReadModels

PAGE = 1000  # rows a query is asked for at a time
STATEMENT_PAGE = 100  # a statement's page (its most)


def verify_read_models(app: Any, stored: ReadModels) -> Verdict:
    """``stored`` (the read models of ``app``'s store) against the events of the store, folded afresh to the
    position the stored views reached: one check per query, each failing with its first difference."""
    verdict = Verdict("read models")
    position = stored.position(app.name)
    if not position:
        verdict.add("position", True, "no read models in this store (or of another version: rebuild them)")
        return verdict
    fresh = ReadModels()  # (in memory: the same fold, nothing written anywhere)
    try:
        fresh.catch_up(app, upto=position)
        verdict.add("position", True, f"the views reach log position {position}; the record folded to it afresh")
        wallets = _all(lambda after: fresh.list_wallets(after, PAGE), lambda w: w.wallet_id)
        _compare(verdict, "wallets", wallets, _all(lambda a: stored.list_wallets(a, PAGE), lambda w: w.wallet_id), _id)
        tables = _all(lambda after: fresh.list_tables(after, PAGE), lambda t: t.table_id)
        _compare(verdict, "tables", tables, _all(lambda a: stored.list_tables(a, PAGE), lambda t: t.table_id), _id)
        rounds = _rounds(fresh)
        _compare(verdict, "rounds", rounds, _rounds(stored), _id)
        players = sorted(
            {w.wallet_id for w in wallets}
            | {p.player for r in rounds for p in r.players}
            | {r.banker for r in rounds if r.banker is not None}
        )
        _players(verdict, fresh, stored, players)
        _statements(verdict, fresh, stored, [w.wallet_id for w in wallets])
        _compare(verdict, "open rounds", fresh.open_rounds(), stored.open_rounds(), _id)
        _compare(verdict, "house ledger", [fresh.house_totals()], [stored.house_totals()], lambda _t: "the house")
    finally:
        fresh.close()
    return verdict


def _id(row: Any) -> str:
    for name in ("round_id", "table_id", "wallet_id"):
        if hasattr(row, name):
            return f"{name.split('_')[0]} {getattr(row, name)!r}"
    return f"position {getattr(row, 'position', '?')}"


def _all(page: Callable[[str | None], Sequence[Any]], key: Callable[[Any], str]) -> list[Any]:
    """Every row of a directory query, paged by the last row's id."""
    out: list[Any] = []
    after: str | None = None
    while True:
        rows = page(after)
        out.extend(rows)
        if len(rows) < PAGE:
            return out
        after = key(rows[-1])


def _rounds(views: ReadModels, player: str | None = None) -> list[RoundSummary]:
    """Every closed round (of ``player``, if given), newest first."""
    out: list[RoundSummary] = []
    before: int | None = None
    while True:
        rows = views.list_rounds(player=player, before_position=before, limit=PAGE)
        out.extend(rows)
        if len(rows) < PAGE:
            return out
        before = rows[-1].closed_position


def _players(verdict: Verdict, fresh: ReadModels, stored: ReadModels, players: Sequence[str]) -> None:
    for player in players:
        if not _compare(None, "", _rounds(fresh, player), _rounds(stored, player), _id, quiet=True):
            _compare(verdict, "players' rounds", _rounds(fresh, player), _rounds(stored, player), _id, who=player)
            return
    verdict.add("players' rounds", True, f"the rounds of each of {len(players)} players as the record has them")


def _statements(verdict: Verdict, fresh: ReadModels, stored: ReadModels, wallets: Sequence[str]) -> None:
    lines = 0
    for wallet_id in wallets:
        mine, theirs = list(_statement(fresh, wallet_id)), list(_statement(stored, wallet_id))
        if not _compare(None, "", mine, theirs, _id, quiet=True):
            _compare(verdict, "statements", mine, theirs, _id, who=f"wallet {wallet_id!r}")
            return
        lines += len(mine)
    verdict.add("statements", True, f"{lines} lines of {len(wallets)} wallets' statements as the record has them")


def _statement(views: ReadModels, wallet_id: str) -> Iterator[Any]:
    after = 0
    while True:
        rows = views.statement(wallet_id, after, STATEMENT_PAGE)
        yield from rows
        if len(rows) < STATEMENT_PAGE:
            return
        after = rows[-1].position


def _compare(
    verdict: Verdict | None,
    name: str,
    record: Sequence[Any],
    views: Sequence[Any],
    label: Callable[[Any], str],
    *,
    who: str = "",
    quiet: bool = False,
) -> bool:
    """Whether the views answer what the record does, row by row; the first difference named in ``verdict``."""
    problem = _difference(record, views, label)
    if verdict is not None and not quiet:
        about = f"{who}: " if who else ""
        verdict.add(
            name, problem is None, f"{about}{problem}" if problem else f"{len(record)} rows as the record has them"
        )
    return problem is None


def _difference(record: Sequence[Any], views: Sequence[Any], label: Callable[[Any], str]) -> str | None:
    for expected, found in zip(record, views, strict=False):
        if expected == found:
            continue
        if label(expected) != label(found):
            return f"the views list {label(found)} where the record has {label(expected)}"
        for field, value in expected.model_dump().items():
            other = getattr(found, field, None)
            if other != value:
                return f"{label(expected)}: the views say {field} {other!r}, the record {value!r}"
        return f"{label(expected)} differs from the record"
    if len(views) > len(record):
        return f"the views list {label(views[len(record)])}, which the record does not have"
    if len(record) > len(views):
        return f"the views lack {label(record[len(views)])}"
    return None


__all__ = ["verify_read_models"]
