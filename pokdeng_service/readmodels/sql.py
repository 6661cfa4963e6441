"""The SQL views shared by the SQLite and PostgreSQL recorders: the views' DDL, the writes and the queries.

Tables (beside the tracking table, in the application's store: the same SQLite file, the same
PostgreSQL database and schema): ``pokdeng_open_rounds``, ``pokdeng_round_history`` and
``pokdeng_round_players``, ``pokdeng_wallets`` and ``pokdeng_wallet_statement``,
``pokdeng_house_ledger`` (``models`` says what each holds). Statements are written once with
``%s`` placeholders (turned into ``?`` for SQLite) and ``{table}`` names (schema-qualified for
PostgreSQL); each backend's module (``sqlite``, ``postgres``) supplies the dialect and its
tracking table.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar

from eventsourcing.persistence import Tracking

from pokdeng_service.application.views import StatementLine
from pokdeng_service.readmodels.fold import Item, Project, _Batch, _project
from pokdeng_service.readmodels.models import (
    HouseTotals,
    OpenRound,
    PlayerResult,
    RoundSummary,
    WalletBalance,
    _Round,
    _Wallet,
)
from pokdeng_service.readmodels.recorder import MIGRATION_ROW, TRACKING_TABLE, ReadModelRecorder

_VIEW_TABLES = (
    "pokdeng_open_rounds",
    "pokdeng_round_history",
    "pokdeng_round_players",
    "pokdeng_wallets",
    "pokdeng_wallet_statement",
    "pokdeng_house_ledger",
)
_CREATE = (
    "CREATE TABLE IF NOT EXISTS {pokdeng_open_rounds} ("
    "round_id TEXT PRIMARY KEY, table_id TEXT NOT NULL, round_no BIGINT NOT NULL, last_kind TEXT NOT NULL, "
    "last_position BIGINT NOT NULL, version BIGINT NOT NULL, started_position BIGINT NOT NULL, "
    "started_at TEXT NOT NULL, info TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS pokdeng_open_rounds_by_table ON {pokdeng_open_rounds} (table_id, started_position)",
    "CREATE TABLE IF NOT EXISTS {pokdeng_round_history} ("
    "round_id TEXT PRIMARY KEY, table_id TEXT NOT NULL, round_no BIGINT NOT NULL, profile TEXT NOT NULL, "
    "profile_version BIGINT NOT NULL, outcome TEXT NOT NULL, banker TEXT, house_net BIGINT NOT NULL, "
    "commission BIGINT NOT NULL, players TEXT NOT NULL, opened_at TEXT NOT NULL, closed_at TEXT NOT NULL, "
    "opened_position BIGINT NOT NULL, closed_position BIGINT NOT NULL UNIQUE)",
    "CREATE INDEX IF NOT EXISTS pokdeng_round_history_by_table ON {pokdeng_round_history} (table_id, closed_position)",
    "CREATE TABLE IF NOT EXISTS {pokdeng_round_players} ("
    "player TEXT NOT NULL, closed_position BIGINT NOT NULL, round_id TEXT NOT NULL, table_id TEXT NOT NULL, "
    "PRIMARY KEY (player, closed_position))",
    "CREATE TABLE IF NOT EXISTS {pokdeng_wallets} ("
    "wallet_key TEXT PRIMARY KEY, wallet_id TEXT NOT NULL, balance BIGINT NOT NULL, reserved BIGINT NOT NULL, "
    "version BIGINT NOT NULL, position BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {pokdeng_wallet_statement} ("
    "wallet_key TEXT NOT NULL, version BIGINT NOT NULL, position BIGINT NOT NULL, kind TEXT NOT NULL, "
    "amount BIGINT NOT NULL, reserved_change BIGINT NOT NULL, balance_after BIGINT NOT NULL, "
    "round_id TEXT NOT NULL, reference TEXT NOT NULL, at TEXT NOT NULL, PRIMARY KEY (wallet_key, version))",
    "CREATE TABLE IF NOT EXISTS {pokdeng_house_ledger} ("
    "table_id TEXT PRIMARY KEY, house_net BIGINT NOT NULL, commission BIGINT NOT NULL, rounds BIGINT NOT NULL, "
    "settled BIGINT NOT NULL, voided BIGINT NOT NULL, position BIGINT NOT NULL)",
)
_ROUND_COLUMNS = "round_id, table_id, round_no, last_kind, last_position, version, started_position, started_at, info"
_HISTORY_COLUMNS = (
    "round_id, table_id, round_no, profile, profile_version, outcome, banker, house_net, commission, players, "
    "opened_at, closed_at, opened_position, closed_position"
)
_LINE_COLUMNS = "version, kind, amount, reserved_change, balance_after, round_id, reference, at"


def _history_row(summary: RoundSummary) -> tuple[Any, ...]:
    players = json.dumps([[p.player, p.staked, p.net] for p in summary.players], separators=(",", ":"))
    return (
        summary.round_id,
        summary.table_id,
        summary.round_no,
        summary.profile,
        summary.profile_version,
        summary.outcome,
        summary.banker,
        summary.house_net,
        summary.commission,
        players,
        summary.opened_at,
        summary.closed_at,
        summary.opened_position,
        summary.closed_position,
    )


def _summary_from_row(row: Sequence[Any]) -> RoundSummary:
    values = dict(zip([c.strip() for c in _HISTORY_COLUMNS.split(",")], row, strict=True))
    values["players"] = tuple(PlayerResult(player=p, staked=s, net=n) for p, s, n in json.loads(values["players"]))
    return RoundSummary(**values)


def _line_from_row(row: Sequence[Any]) -> StatementLine:
    version, kind, amount, reserved, balance, round_id, reference, at = row
    return StatementLine(
        position=version,
        kind=kind,
        amount=amount,
        reserved_change=reserved,
        balance_after=balance,
        round_id=round_id,
        reference=reference,
        at=at,
    )


class _SQLViews(ReadModelRecorder, ABC):
    """The SQL views, shared by the SQLite and PostgreSQL recorders (which supply the dialect)."""

    lock_suffix: ClassVar[str] = ""  # PostgreSQL: " FOR UPDATE"

    @abstractmethod
    def _name(self, table: str) -> str:
        """A table's name as written in SQL (schema-qualified where needed)."""

    @abstractmethod
    def _sql(self, text: str) -> str:
        """The dialect's form of a statement written with %s placeholders."""

    @abstractmethod
    def _transaction(self, *, commit: bool) -> AbstractContextManager[Any]: ...

    @abstractmethod
    def _track(self, cursor: Any, tracking: Tracking) -> None:
        """The library's tracking insert (refuses a position that does not grow)."""

    def _q(self, text: str) -> str:
        names = {t: self._name(t) for t in (*_VIEW_TABLES, TRACKING_TABLE)}
        return self._sql(text.format(tracking=names[TRACKING_TABLE], **names))

    def _view_statements(self) -> list[str]:
        return [self._q(s) for s in _CREATE]

    @staticmethod
    def _rows(cursor: Any) -> list[tuple[Any, ...]]:
        return [tuple(r.values()) if isinstance(r, dict) else tuple(r) for r in cursor.fetchall()]

    def _lock_position(self, cursor: Any, application_name: str) -> int:
        cursor.execute(
            self._q("INSERT INTO {tracking} (application_name, notification_id) VALUES (%s, 0) ON CONFLICT DO NOTHING"),
            (application_name,),
        )
        cursor.execute(
            self._q("SELECT notification_id FROM {tracking} WHERE application_name = %s" + self.lock_suffix),
            (application_name,),
        )
        rows = self._rows(cursor)
        return int(rows[0][0] or 0)

    # -- writing ---------------------------------------------------------------------------

    def apply(
        self, application_name: str, expected: int | None, items: Sequence[Item], project: Project = _project
    ) -> None:
        if not items:
            return
        with self._transaction(commit=True) as cursor:
            current = self._lock_position(cursor, application_name)
            self._check_items(application_name, current, expected, items)
            batch = _Batch(reader=_SQLReader(self, cursor))
            for position, event in items:
                if event is not None:
                    project(batch, position, event)
            self._flush(cursor, batch)
            self._track(cursor, Tracking(application_name, items[-1][0]))

    def _flush(self, cursor: Any, batch: _Batch) -> None:
        q = self._q
        gone = [(rid,) for rid in batch.dirty_rounds if batch.rounds.get(rid) is None]
        if gone:
            cursor.executemany(q("DELETE FROM {pokdeng_open_rounds} WHERE round_id = %s"), gone)
        kept = [r for rid in batch.dirty_rounds if (r := batch.rounds.get(rid)) is not None]
        if kept:
            cursor.executemany(
                q(
                    f"INSERT INTO {{pokdeng_open_rounds}} ({_ROUND_COLUMNS}) VALUES ({', '.join(['%s'] * 9)}) "
                    "ON CONFLICT (round_id) DO UPDATE SET table_id = excluded.table_id, "
                    "round_no = excluded.round_no, last_kind = excluded.last_kind, "
                    "last_position = excluded.last_position, version = excluded.version, info = excluded.info"
                ),
                [
                    (
                        r.round_id,
                        r.table_id,
                        r.round_no,
                        r.last_kind,
                        r.last_position,
                        r.version,
                        r.started_position,
                        r.started_at,
                        r.info(),
                    )
                    for r in kept
                ],
            )
        if batch.closed:
            cursor.executemany(
                q(f"INSERT INTO {{pokdeng_round_history}} ({_HISTORY_COLUMNS}) VALUES ({', '.join(['%s'] * 14)})"),
                [_history_row(s) for s in batch.closed],
            )
            players = {
                (name, s.closed_position, s.round_id, s.table_id)
                for s in batch.closed
                for name in [p.player for p in s.players]
            }
            if players:
                cursor.executemany(
                    q(
                        "INSERT INTO {pokdeng_round_players} (player, closed_position, round_id, table_id) "
                        "VALUES (%s, %s, %s, %s)"
                    ),
                    sorted(players),
                )
        wallets = [w for key in batch.dirty_wallets if (w := batch.wallets.get(key)) is not None]
        if wallets:
            cursor.executemany(
                q(
                    "INSERT INTO {pokdeng_wallets} (wallet_key, wallet_id, balance, reserved, version, position) "
                    "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (wallet_key) DO UPDATE SET "
                    "balance = excluded.balance, reserved = excluded.reserved, version = excluded.version, "
                    "position = excluded.position"
                ),
                [(w.key, w.wallet_id, w.balance, w.reserved, w.version, w.position) for w in wallets],
            )
        if batch.lines:
            cursor.executemany(
                q(
                    f"INSERT INTO {{pokdeng_wallet_statement}} (wallet_key, position, {_LINE_COLUMNS}) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                ),
                [
                    (
                        key,
                        position,
                        line.position,
                        line.kind,
                        line.amount,
                        line.reserved_change,
                        line.balance_after,
                        line.round_id,
                        line.reference,
                        line.at,
                    )
                    for key, position, line in batch.lines
                ],
            )
        if batch.house:
            cursor.executemany(
                q(
                    "INSERT INTO {pokdeng_house_ledger} AS h "
                    "(table_id, house_net, commission, rounds, settled, voided, position) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (table_id) DO UPDATE SET "
                    "house_net = h.house_net + excluded.house_net, commission = h.commission + excluded.commission, "
                    "rounds = h.rounds + excluded.rounds, settled = h.settled + excluded.settled, "
                    "voided = h.voided + excluded.voided, position = excluded.position"
                ),
                [
                    (table, h.house_net, h.commission, h.rounds, h.settled, h.voided, h.position)
                    for table, h in sorted(batch.house.items())
                ],
            )

    def reset(self) -> None:
        with self._transaction(commit=True) as cursor:
            # The tracking rows first: that takes the write lock (SQLite) and the rows' locks (PostgreSQL)
            # before anything else, in the same order as ``apply``.
            cursor.execute(
                self._q("UPDATE {tracking} SET notification_id = 0 WHERE application_name <> %s"), (MIGRATION_ROW,)
            )
            for table in _VIEW_TABLES:
                cursor.execute(self._q(f"DROP TABLE IF EXISTS {{{table}}}"))
            for statement in self._view_statements():
                cursor.execute(statement)

    # -- reading ---------------------------------------------------------------------------

    def _select(self, text: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self._transaction(commit=False) as cursor:
            cursor.execute(self._q(text), tuple(params))
            return self._rows(cursor)

    def last_rounds(self, table_id: str | None, player: str | None, limit: int) -> tuple[RoundSummary, ...]:
        columns = ", ".join(f"h.{c.strip()}" for c in _HISTORY_COLUMNS.split(","))
        where: list[str] = []
        params: list[Any] = []
        if player is not None:
            source = "{pokdeng_round_players} p JOIN {pokdeng_round_history} h ON h.round_id = p.round_id"
            where.append("p.player = %s")
            params.append(player)
            if table_id is not None:
                where.append("p.table_id = %s")
                params.append(table_id)
            order = "p.closed_position"
        else:
            source = "{pokdeng_round_history} h"
            if table_id is not None:
                where.append("h.table_id = %s")
                params.append(table_id)
            order = "h.closed_position"
        text = f"SELECT {columns} FROM {source}"
        if where:
            text += " WHERE " + " AND ".join(where)
        text += f" ORDER BY {order} DESC LIMIT %s"
        rows = self._select(text, [*params, limit])
        return tuple(_summary_from_row(r) for r in reversed(rows))

    def statement(self, wallet_key: str, after: int, limit: int) -> tuple[StatementLine, ...]:
        rows = self._select(
            f"SELECT {_LINE_COLUMNS} FROM {{pokdeng_wallet_statement}} WHERE wallet_key = %s AND version > %s "
            "ORDER BY version LIMIT %s",
            (wallet_key, after, limit),
        )
        return tuple(_line_from_row(r) for r in rows)

    def wallet_balance(self, wallet_key: str) -> WalletBalance | None:
        rows = self._select(
            "SELECT wallet_key, wallet_id, balance, reserved, version, position FROM {pokdeng_wallets} "
            "WHERE wallet_key = %s",
            (wallet_key,),
        )
        return _Wallet(*rows[0]).as_balance() if rows else None

    def open_rounds(self, table_id: str | None) -> tuple[OpenRound, ...]:
        text = f"SELECT {_ROUND_COLUMNS} FROM {{pokdeng_open_rounds}}"
        params: tuple[Any, ...] = ()
        if table_id is not None:
            text += " WHERE table_id = %s"
            params = (table_id,)
        rows = self._select(text + " ORDER BY started_position", params)
        return tuple(_Round.from_row(r).as_open() for r in rows)

    def house_totals(self, table_id: str | None) -> HouseTotals:
        text = (
            "SELECT COALESCE(SUM(house_net), 0) AS house_net, COALESCE(SUM(commission), 0) AS commission, "
            "COALESCE(SUM(rounds), 0) AS rounds, COALESCE(SUM(settled), 0) AS settled, "
            "COALESCE(SUM(voided), 0) AS voided FROM {pokdeng_house_ledger}"
        )
        params: tuple[Any, ...] = ()
        if table_id is not None:
            text += " WHERE table_id = %s"
            params = (table_id,)
        house_net, commission, rounds, settled, voided = self._select(text, params)[0]
        return HouseTotals(
            house_net=int(house_net),
            commission=int(commission),
            rounds=int(rounds),
            settled=int(settled),
            voided=int(voided),
        )


class _SQLReader:
    def __init__(self, views: _SQLViews, cursor: Any) -> None:
        self.views = views
        self.cursor = cursor

    def load_round(self, round_id: str) -> _Round | None:
        self.cursor.execute(
            self.views._q(f"SELECT {_ROUND_COLUMNS} FROM {{pokdeng_open_rounds}} WHERE round_id = %s"), (round_id,)
        )
        rows = self.views._rows(self.cursor)
        return _Round.from_row(rows[0]) if rows else None

    def load_wallet(self, key: str) -> _Wallet | None:
        self.cursor.execute(
            self.views._q(
                "SELECT wallet_key, wallet_id, balance, reserved, version, position FROM {pokdeng_wallets} "
                "WHERE wallet_key = %s"
            ),
            (key,),
        )
        rows = self.views._rows(self.cursor)
        return _Wallet(*rows[0]) if rows else None
