"""The SQL views shared by the SQLite and PostgreSQL recorders: the writes, the queries, the migration.

The tables and the conversions of their rows are in ``sqlschema``. Statements are written once
with ``%s`` placeholders (turned into ``?`` for SQLite) and ``{table}`` names (schema-qualified
for PostgreSQL); each backend's module (``sqlite``, ``postgres``) supplies the dialect and its
tracking table, and calls :meth:`SQLViews._migrate` in the transaction that creates the tables
(``recorder`` says when views are dropped and replayed: another ``VIEWS_VERSION``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar

from eventsourcing.persistence import Tracking

from pokdeng_service.application.views import StatementLine
from pokdeng_service.readmodels.fold import Batch, Item, Project, project_event
from pokdeng_service.readmodels.models import (
    TABLE_FIELDS,
    HouseTotals,
    OpenRound,
    RoundFold,
    RoundSummary,
    TableFold,
    TableSummary,
    WalletBalance,
    WalletFold,
)
from pokdeng_service.readmodels.paging import RoundFilter
from pokdeng_service.readmodels.recorder import (
    MIGRATION_ROW,
    TRACKING_TABLE,
    VIEWS_ROW,
    VIEWS_VERSION,
    ReadModelRecorder,
)
from pokdeng_service.readmodels.sqlschema import (
    CREATE,
    HISTORY_COLUMNS,
    HISTORY_NAMES,
    LINE_COLUMNS,
    ROUND_COLUMNS,
    TABLE_COLUMNS,
    VIEW_TABLES,
    WALLET_COLUMNS,
    history_row,
    line_from_row,
    summary_from_row,
)


class SQLViews(ReadModelRecorder, ABC):
    """The SQL views, shared by the SQLite and PostgreSQL recorders (which supply the dialect)."""

    lock_suffix: ClassVar[str] = ""  # PostgreSQL: " FOR UPDATE"
    bytewise: ClassVar[str] = ""  # how a text column compares by code point (PostgreSQL: ' COLLATE "C"')

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
        names = {t: self._name(t) for t in (*VIEW_TABLES, TRACKING_TABLE)}
        return self._sql(text.format(tracking=names[TRACKING_TABLE], bytewise=self.bytewise, **names))

    def _view_statements(self) -> list[str]:
        return [self._q(s) for s in CREATE]

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
        self, application_name: str, expected: int | None, items: Sequence[Item], project: Project = project_event
    ) -> None:
        if not items:
            return
        with self._transaction(commit=True) as cursor:
            current = self._lock_position(cursor, application_name)
            self._check_items(application_name, current, expected, items)
            batch = Batch(reader=_SQLReader(self, cursor))
            for position, event in items:
                if event is not None:
                    project(batch, position, event)
            self._flush(cursor, batch)
            self._track(cursor, Tracking(application_name, items[-1][0]))

    def _flush(self, cursor: Any, batch: Batch) -> None:
        """The batch's changes written, each kind of row by its statement (``_WRITES``, in order)."""
        for statement, rows_of in _WRITES:
            rows = rows_of(batch)
            if rows:
                cursor.executemany(self._q(statement), rows)

    def reset(self) -> None:
        with self._transaction(commit=True) as cursor:
            # The tracking rows first: that takes the write lock (SQLite) and the rows' locks (PostgreSQL)
            # before anything else: the views' row, then the positions (``apply`` locks only a position).
            self._lock_position(cursor, VIEWS_ROW)
            self._reset(cursor)

    def _migrate(self, cursor: Any) -> None:
        """In the transaction that creates the tables: views of another version (or of none yet, as in
        stores made before the version was kept) are dropped and made again, every position set to 0."""
        if self._views_version(cursor) == VIEWS_VERSION:
            return  # the usual start: read only, no lock taken
        if self._lock_position(cursor, VIEWS_ROW) != VIEWS_VERSION:  # locked, again: another may have done it
            self._reset(cursor)

    def _views_version(self, cursor: Any) -> int | None:
        cursor.execute(self._q("SELECT notification_id FROM {tracking} WHERE application_name = %s"), (VIEWS_ROW,))
        rows = self._rows(cursor)
        return int(rows[0][0]) if rows else None

    def _reset(self, cursor: Any) -> None:
        """Empty views of this version, every position at 0 (the views' row locked by the caller)."""
        cursor.execute(
            self._q("UPDATE {tracking} SET notification_id = 0 WHERE application_name NOT IN (%s, %s)"),
            (MIGRATION_ROW, VIEWS_ROW),
        )
        for table in VIEW_TABLES:
            cursor.execute(self._q(f"DROP TABLE IF EXISTS {{{table}}}"))
        for statement in self._view_statements():
            cursor.execute(statement)
        cursor.execute(
            self._q("UPDATE {tracking} SET notification_id = %s WHERE application_name = %s"),
            (VIEWS_VERSION, VIEWS_ROW),
        )

    def views_current(self) -> bool:
        with self._transaction(commit=False) as cursor:
            return self._views_version(cursor) == VIEWS_VERSION

    # -- reading ---------------------------------------------------------------------------

    def _select(self, text: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self._transaction(commit=False) as cursor:
            cursor.execute(self._q(text), tuple(params))
            return self._rows(cursor)

    def last_rounds(self, table_id: str | None, player: str | None, limit: int) -> tuple[RoundSummary, ...]:
        return tuple(reversed(self.list_rounds(RoundFilter(table_id, player), None, limit)))

    def list_rounds(self, query: RoundFilter, before_position: int | None, limit: int) -> tuple[RoundSummary, ...]:
        table_id, player = query.table_id, query.player
        columns = ", ".join(f"h.{c}" for c in HISTORY_NAMES)
        where: list[str] = []
        params: list[Any] = []
        if player is not None:  # the player's rounds by their index, then the table's among them
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
        for condition, value in (
            (f"{order} < %s", before_position),
            ("h.closed_at >= %s", query.closed_from),
            ("h.closed_at < %s", query.closed_to),
            ("h.outcome = %s", query.outcome),
        ):
            if value is not None:
                where.append(condition)
                params.append(value)
        text = f"SELECT {columns} FROM {source}"
        if where:
            text += " WHERE " + " AND ".join(where)
        text += f" ORDER BY {order} DESC LIMIT %s"
        return tuple(summary_from_row(r) for r in self._select(text, [*params, limit]))

    def list_tables(self, after: str | None, limit: int, profile: str | None) -> tuple[TableSummary, ...]:
        where: list[str] = []
        params: list[Any] = []
        for condition, value in (("table_id > %s", after), ("profile = %s", profile)):
            if value is not None:
                where.append(condition)
                params.append(value)
        text = f"SELECT {TABLE_COLUMNS} FROM {{pokdeng_tables}}"
        if where:
            text += " WHERE " + " AND ".join(where)
        rows = self._select(text + " ORDER BY table_id LIMIT %s", [*params, limit])
        return tuple(TableFold(*r).as_summary() for r in rows)

    def list_wallets(self, after: str | None, limit: int) -> tuple[WalletBalance, ...]:
        text = f"SELECT {WALLET_COLUMNS} FROM {{pokdeng_wallets}}"
        params: list[Any] = []
        if after is not None:
            text += " WHERE wallet_id > %s"
            params.append(after)
        rows = self._select(text + " ORDER BY wallet_id, wallet_key LIMIT %s", [*params, limit])
        return tuple(WalletFold(*r).as_balance() for r in rows)

    def statement(self, wallet_key: str, after: int, limit: int) -> tuple[StatementLine, ...]:
        rows = self._select(
            f"SELECT {LINE_COLUMNS} FROM {{pokdeng_wallet_statement}} WHERE wallet_key = %s AND version > %s "
            "ORDER BY version LIMIT %s",
            (wallet_key, after, limit),
        )
        return tuple(line_from_row(r) for r in rows)

    def wallet_balance(self, wallet_key: str) -> WalletBalance | None:
        rows = self._select(f"SELECT {WALLET_COLUMNS} FROM {{pokdeng_wallets}} WHERE wallet_key = %s", (wallet_key,))
        return WalletFold(*rows[0]).as_balance() if rows else None

    def open_rounds(self, table_id: str | None) -> tuple[OpenRound, ...]:
        text = f"SELECT {ROUND_COLUMNS} FROM {{pokdeng_open_rounds}}"
        params: tuple[Any, ...] = ()
        if table_id is not None:
            text += " WHERE table_id = %s"
            params = (table_id,)
        rows = self._select(text + " ORDER BY started_position", params)
        return tuple(RoundFold.from_row(r).as_open() for r in rows)

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
    def __init__(self, views: SQLViews, cursor: Any) -> None:
        self.views = views
        self.cursor = cursor

    def load_round(self, round_id: str) -> RoundFold | None:
        self.cursor.execute(
            self.views._q(f"SELECT {ROUND_COLUMNS} FROM {{pokdeng_open_rounds}} WHERE round_id = %s"), (round_id,)
        )
        rows = self.views._rows(self.cursor)
        return RoundFold.from_row(rows[0]) if rows else None

    def load_wallet(self, key: str) -> WalletFold | None:
        self.cursor.execute(
            self.views._q(f"SELECT {WALLET_COLUMNS} FROM {{pokdeng_wallets}} WHERE wallet_key = %s"), (key,)
        )
        rows = self.views._rows(self.cursor)
        return WalletFold(*rows[0]) if rows else None

    def load_table(self, table_id: str) -> TableFold | None:
        self.cursor.execute(
            self.views._q(f"SELECT {TABLE_COLUMNS} FROM {{pokdeng_tables}} WHERE table_id = %s"), (table_id,)
        )
        rows = self.views._rows(self.cursor)
        return TableFold(*rows[0]) if rows else None


# --- the writes of a batch (``SQLViews._flush``) ---------------------------------------------------

Rows = list[tuple[Any, ...]]


def _gone_rounds(batch: Batch) -> Rows:
    return [(rid,) for rid in batch.dirty_rounds if batch.rounds.get(rid) is None]


def _open_rounds(batch: Batch) -> Rows:
    kept = [r for rid in batch.dirty_rounds if (r := batch.rounds.get(rid)) is not None]
    return [
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
    ]


def _history(batch: Batch) -> Rows:
    return [history_row(s) for s in batch.closed]


def _round_players(batch: Batch) -> Rows:
    players = {
        (name, s.closed_position, s.round_id, s.table_id)
        for s in batch.closed
        for name in [p.player for p in s.players]
    }
    return sorted(players)


def _wallets(batch: Batch) -> Rows:
    wallets = [w for key in sorted(batch.dirty_wallets) if (w := batch.wallets.get(key)) is not None]
    return [(w.key, w.wallet_id, w.balance, w.reserved, w.version, w.position, w.currency) for w in wallets]


def _tables(batch: Batch) -> Rows:
    tables = [t for table_id in sorted(batch.dirty_tables) if (t := batch.tables.get(table_id)) is not None]
    return [t.row() for t in tables]


def _statement_lines(batch: Batch) -> Rows:
    return [
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
    ]


def _house(batch: Batch) -> Rows:
    return [
        (table, h.house_net, h.commission, h.rounds, h.settled, h.voided, h.position)
        for table, h in sorted(batch.house.items())
    ]


_TABLE_MARKS = ", ".join(["%s"] * len(TABLE_FIELDS))
_TABLE_UPDATES = ", ".join(f"{name} = excluded.{name}" for name in TABLE_FIELDS if name != "table_id")

_WRITES: tuple[tuple[str, Callable[[Batch], Rows]], ...] = (
    ("DELETE FROM {pokdeng_open_rounds} WHERE round_id = %s", _gone_rounds),
    (
        f"INSERT INTO {{pokdeng_open_rounds}} ({ROUND_COLUMNS}) VALUES ({', '.join(['%s'] * 9)}) "
        "ON CONFLICT (round_id) DO UPDATE SET table_id = excluded.table_id, "
        "round_no = excluded.round_no, last_kind = excluded.last_kind, "
        "last_position = excluded.last_position, version = excluded.version, info = excluded.info",
        _open_rounds,
    ),
    (f"INSERT INTO {{pokdeng_round_history}} ({HISTORY_COLUMNS}) VALUES ({', '.join(['%s'] * 14)})", _history),
    (
        "INSERT INTO {pokdeng_round_players} (player, closed_position, round_id, table_id) VALUES (%s, %s, %s, %s)",
        _round_players,
    ),
    (
        f"INSERT INTO {{pokdeng_wallets}} ({WALLET_COLUMNS}) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (wallet_key) DO UPDATE SET "
        "balance = excluded.balance, reserved = excluded.reserved, version = excluded.version, "
        "position = excluded.position",
        _wallets,
    ),
    (
        f"INSERT INTO {{pokdeng_tables}} ({TABLE_COLUMNS}) VALUES ({_TABLE_MARKS}) "
        f"ON CONFLICT (table_id) DO UPDATE SET {_TABLE_UPDATES}",
        _tables,
    ),
    (
        f"INSERT INTO {{pokdeng_wallet_statement}} (wallet_key, position, {LINE_COLUMNS}) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        _statement_lines,
    ),
    (
        "INSERT INTO {pokdeng_house_ledger} AS h "
        "(table_id, house_net, commission, rounds, settled, voided, position) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (table_id) DO UPDATE SET "
        "house_net = h.house_net + excluded.house_net, commission = h.commission + excluded.commission, "
        "rounds = h.rounds + excluded.rounds, settled = h.settled + excluded.settled, "
        "voided = h.voided + excluded.voided, position = excluded.position",
        _house,
    ),
)
"""What ``_flush`` writes, in order: each statement, and the rows of a batch it is run on (none: not run)."""
