"""Read models built from the application's notification log, with persisted tracking positions.

Views (all derived, all rebuildable from the log):

* **round history** (``pokdeng_round_history`` + ``pokdeng_round_players``): one row per closed
  round — round id, table id, round number, profile, outcome (``settled``/``voided``), every wallet
  with money in it and its net, the banker (None: the house), the house's net and commission,
  opened and closed times, and the log position of its ``round_closed``. Query
  :meth:`ReadModels.last_rounds` (per table and/or per player; the last N in play order).
* **wallet statement** (``pokdeng_wallet_statement`` + ``pokdeng_wallets``): every movement of a
  wallet with its running balance, line for line what ``PokdengApp.wallet_statement`` gives.
  Queries :meth:`ReadModels.statement`, :meth:`ReadModels.wallet_balance`.
* **open rounds** (``pokdeng_open_rounds``): rounds started and not closed, with the kind and log
  position of their last event; after a restart they are the rounds to resume or void.
  Query :meth:`ReadModels.open_rounds`.
* **house ledger** (``pokdeng_house_ledger``): per table, the sum of ``house_net`` and ``commission``
  over the table's ``round_finished`` facts (the same figures as the round's ``round_settled``;
  only the table's are counted, so nothing is counted twice). Query :meth:`ReadModels.house_totals`.

Positions and tracking
----------------------
A *position* is an event's notification id in the application's notification log (SQLite: the
events table's rowid; PostgreSQL: ``notification_id``; in memory: the 1-based index), the order in
which events were committed. Positions grow but may have gaps (PostgreSQL sequences skip the ids of
rolled-back inserts). Position 0 means "nothing processed".

The tracking record lives in the table ``pokdeng_readmodels_tracking`` (the *tracking name*
``pokdeng_readmodels``; it is also the eventsourcing environment name, so
``POKDENG_READMODELS_<KEY>`` settings override ``<KEY>`` for the read models only). Its row
``application_name = app.name`` (``"pokdeng"``) holds the position of the last notification whose
effects are in the views. The table sits in the application's store: the same SQLite file, the
same PostgreSQL database and schema. In memory (POPO) it is a dict beside the views.

Exactly once
------------
Notifications are read in pages of 1,000 with ``app.recorder.select_notifications`` (the notification
log's ``select`` caps a page at ``log_section_size``). A page is projected in ONE database
transaction that (1) locks the tracking row and checks that it still holds the position the page
was read after, (2) writes the page's view changes, (3) records the page's last position with the
library's ``_insert_tracking`` (which also refuses to move backwards). Either the views and the
position change together or neither does: a crash at any point replays from the last committed
position, and a page that another process already projected is refused at (1) and re-read, so no
event is applied twice. The per-event path (:class:`ReadModelProjection`, for eventsourcing's
``ProjectionRunner``) uses the same transaction with the library's rule "the position must grow".

Secret seeds (``SealedSeed``) and request records are never decoded: their notifications only move
the position forward. ``catch_up`` counts every notification it moved past, these included.

Two other numbers are not log positions: a statement line's ``position`` (and ``statement``'s
``after``) is the wallet stream's version, as in ``PokdengApp.wallet_statement``; an open round's
``version`` is the round stream's version. ``ProjectionRunner`` subscribes to
:data:`PROJECTED_TOPICS` only, so under it the tracked position is that of the last event that
changed a view; the next :meth:`ReadModels.catch_up` moves it past the rest.

Use
---
``rm = ReadModels.for_app(app)`` (or ``ReadModels(env)``); ``rm.catch_up(app)`` after a start or
restart; ``rm.run_in_background(app)`` to follow the log (PostgreSQL and POPO wake on new events,
SQLite polls); ``rm.rebuild(app)`` after a change of view code. Queries: ``last_rounds``,
``statement``, ``wallet_balance``, ``open_rounds``, ``house_totals``.
"""

from __future__ import annotations

import functools
import json
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Protocol

from eventsourcing.application import Application
from eventsourcing.domain import DomainEventProtocol
from eventsourcing.persistence import (
    InfrastructureFactory,
    IntegrityError,
    InterfaceError,
    Notification,
    OperationalError,
    Tracking,
    TrackingRecorder,
)
from eventsourcing.popo import POPOTrackingRecorder
from eventsourcing.postgres import PostgresTrackingRecorder
from eventsourcing.projection import Projection
from eventsourcing.sqlite import SQLiteTrackingRecorder
from eventsourcing.utils import Environment, get_topic, resolve_topic
from pydantic import BaseModel, ConfigDict

from pokdeng_core.errors import InvalidCommand
from pokdeng_service.application.views import StatementLine
from pokdeng_service.store.aggregates import ROUND_FACTS, TABLE_FACTS, RoundRecord, Wallet, wallet_movement, wallet_uuid

TRACKING_NAME = "pokdeng_readmodels"
TRACKING_TABLE = f"{TRACKING_NAME}_tracking"
PAGE_SIZE = 1000
MIGRATION_ROW = "__migration__"

# --- what the queries return -----------------------------------------------------------------


class _View(BaseModel):
    model_config = ConfigDict(frozen=True)


class PlayerResult(_View):
    """A wallet with money in a round: what it staked (main and side bets) and its net."""

    player: str
    staked: int
    net: int


class RoundSummary(_View):
    round_id: str
    table_id: str
    round_no: int
    profile: str
    profile_version: int
    outcome: str  # "settled" or "voided"
    banker: str | None  # None: the house
    players: tuple[PlayerResult, ...]
    house_net: int
    commission: int
    opened_at: str
    closed_at: str
    opened_position: int
    closed_position: int  # the log position of the round's round_closed


class OpenRound(_View):
    round_id: str
    table_id: str
    round_no: int
    last_kind: str  # the kind of the round's last event ("bet_placed", "cards_dealt", ...)
    last_position: int  # its log position
    version: int  # the round stream's version after it
    started_at: str
    started_position: int


class HouseTotals(_View):
    house_net: int
    commission: int
    rounds: int
    settled: int
    voided: int


class WalletBalance(_View):
    wallet_id: str
    balance: int
    reserved: int
    available: int
    version: int


# --- the projection's working state ----------------------------------------------------------


@dataclass
class _Round:
    """An open round as the projection accumulates it (``info`` in the open-rounds table)."""

    round_id: str
    table_id: str
    started_position: int
    started_at: str
    round_no: int = 0
    profile: str = ""
    profile_version: int = 0
    banker: str | None = None
    last_kind: str = ""
    last_position: int = 0
    version: int = 0
    staked: dict[str, int] = field(default_factory=dict)
    nets: dict[str, int] = field(default_factory=dict)
    house_net: int = 0
    commission: int = 0

    def info(self) -> str:
        return json.dumps(
            {
                "profile": self.profile,
                "profile_version": self.profile_version,
                "banker": self.banker,
                "staked": list(self.staked.items()),
                "nets": list(self.nets.items()),
                "house_net": self.house_net,
                "commission": self.commission,
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> _Round:
        round_id, table_id, round_no, last_kind, last_position, version, started_position, started_at, info = row
        data = json.loads(info)
        return cls(
            round_id=round_id,
            table_id=table_id,
            started_position=started_position,
            started_at=started_at,
            round_no=round_no,
            profile=data["profile"],
            profile_version=data["profile_version"],
            banker=data["banker"],
            last_kind=last_kind,
            last_position=last_position,
            version=version,
            staked={p: s for p, s in data["staked"]},
            nets={p: n for p, n in data["nets"]},
            house_net=data["house_net"],
            commission=data["commission"],
        )

    def copy(self) -> _Round:
        clone = _Round(**{k: v for k, v in self.__dict__.items()})
        clone.staked = dict(self.staked)
        clone.nets = dict(self.nets)
        return clone

    def as_open(self) -> OpenRound:
        return OpenRound(
            round_id=self.round_id,
            table_id=self.table_id,
            round_no=self.round_no,
            last_kind=self.last_kind,
            last_position=self.last_position,
            version=self.version,
            started_at=self.started_at,
            started_position=self.started_position,
        )


@dataclass
class _Wallet:
    key: str  # the wallet's aggregate id, hex
    wallet_id: str
    balance: int = 0
    reserved: int = 0
    version: int = 0
    position: int = 0

    def as_balance(self) -> WalletBalance:
        return WalletBalance(
            wallet_id=self.wallet_id,
            balance=self.balance,
            reserved=self.reserved,
            available=self.balance - self.reserved,
            version=self.version,
        )


@dataclass
class _House:
    house_net: int = 0
    commission: int = 0
    rounds: int = 0
    settled: int = 0
    voided: int = 0
    position: int = 0


class _Reader(Protocol):
    """Reads of the views inside the transaction that will write the batch."""

    def load_round(self, round_id: str) -> _Round | None: ...

    def load_wallet(self, key: str) -> _Wallet | None: ...


@dataclass
class _Batch:
    """The view changes of a run of notifications, written together with its last position."""

    reader: _Reader
    rounds: dict[str, _Round | None] = field(default_factory=dict)  # None: closed (delete the open row)
    dirty_rounds: set[str] = field(default_factory=set)
    wallets: dict[str, _Wallet | None] = field(default_factory=dict)
    dirty_wallets: set[str] = field(default_factory=set)
    lines: list[tuple[str, int, StatementLine]] = field(default_factory=list)  # (wallet key, log position, line)
    closed: list[RoundSummary] = field(default_factory=list)
    house: dict[str, _House] = field(default_factory=dict)  # deltas by table
    events: int = 0

    def round(self, round_id: str) -> _Round | None:
        if round_id not in self.rounds:
            self.rounds[round_id] = self.reader.load_round(round_id)
        return self.rounds[round_id]

    def wallet(self, key: str) -> _Wallet | None:
        if key not in self.wallets:
            self.wallets[key] = self.reader.load_wallet(key)
        return self.wallets[key]


def _iso(value: datetime) -> str:
    return value.isoformat()


def _project(batch: _Batch, position: int, event: Any) -> None:
    """Fold one decoded domain event into the batch (pure bookkeeping, no I/O beyond the batch's reads)."""
    batch.events += 1
    if isinstance(event, RoundRecord.Started):
        _round_started(batch, position, event)
    elif type(event) in _ROUND_FACT_TYPES:
        _round_fact(batch, position, event)
    elif type(event) in _TABLE_FACT_TYPES:
        if event.kind == "round_finished":
            _round_finished(batch, position, event)
    elif isinstance(event, Wallet.Event):
        _wallet_event(batch, position, event)


def _round_started(batch: _Batch, position: int, event: Any) -> None:
    if batch.round(event.round_id) is not None:
        return
    batch.rounds[event.round_id] = _Round(
        round_id=event.round_id,
        table_id=event.table_id,
        started_position=position,
        started_at=_iso(event.timestamp),
        last_kind="round_started",
        last_position=position,
        version=event.originator_version,
    )
    batch.dirty_rounds.add(event.round_id)


def _round_fact(batch: _Batch, position: int, event: Any) -> None:
    kind: str = event.kind
    data: dict[str, Any] = event.data
    round_id: str = event.stream_id
    state = batch.round(round_id)
    if state is None:  # a round that began before the log did (never in practice): start it here
        state = _Round(
            round_id=round_id,
            table_id=str(data.get("table_id", "")),
            started_position=position,
            started_at=_iso(event.timestamp),
        )
        batch.rounds[round_id] = state
    batch.dirty_rounds.add(round_id)
    state.last_kind = kind
    state.last_position = position
    state.version = event.originator_version
    if kind == "round_opened":
        state.table_id = data["table_id"]
        state.round_no = data["round_no"]
        state.profile = data["profile_name"]
        state.profile_version = data["profile_version"]
        state.banker = data["banker_player"]
    elif kind in ("bet_placed", "side_bet_placed"):
        player = data["player"]
        state.staked[player] = state.staked.get(player, 0) + data["stake"]
    elif kind == "round_settled":
        for player, _reserved, net in data["wallets"]:
            state.nets[player] = state.nets.get(player, 0) + net
        state.house_net = data["house_net"]
        state.commission = data["commission"]
    elif kind == "round_voided":
        for player, _reserved in data["wallets"]:
            state.nets.setdefault(player, 0)
    elif kind == "round_closed":
        batch.closed.append(_summary(state, data["outcome"], position, _iso(event.timestamp)))
        batch.rounds[round_id] = None


def _summary(state: _Round, outcome: str, position: int, closed_at: str) -> RoundSummary:
    names = list(state.staked)
    names += [p for p in state.nets if p not in state.staked]
    if state.banker is not None and state.banker not in names:
        names.append(state.banker)
    players = tuple(PlayerResult(player=p, staked=state.staked.get(p, 0), net=state.nets.get(p, 0)) for p in names)
    return RoundSummary(
        round_id=state.round_id,
        table_id=state.table_id,
        round_no=state.round_no,
        profile=state.profile,
        profile_version=state.profile_version,
        outcome=outcome,
        banker=state.banker,
        players=players,
        house_net=state.house_net if outcome == "settled" else 0,
        commission=state.commission if outcome == "settled" else 0,
        opened_at=state.started_at,
        closed_at=closed_at,
        opened_position=state.started_position,
        closed_position=position,
    )


def _round_finished(batch: _Batch, position: int, event: Any) -> None:
    data: dict[str, Any] = event.data
    house = batch.house.setdefault(event.stream_id, _House())
    house.house_net += int(data.get("house_net", 0))
    house.commission += int(data.get("commission", 0))
    house.rounds += 1
    if data.get("outcome") == "settled":
        house.settled += 1
    elif data.get("outcome") == "voided":
        house.voided += 1
    house.position = position


def _wallet_event(batch: _Batch, position: int, event: Any) -> None:
    key = event.originator_id.hex
    name = type(event).__name__
    wallet = batch.wallet(key)
    if wallet is None:
        wallet_id = getattr(event, "wallet_id", None)
        if wallet_id is None:  # not opened in the log (never in practice): keep the line under its uuid
            wallet_id = str(event.originator_id)
        wallet = _Wallet(key=key, wallet_id=wallet_id)
        batch.wallets[key] = wallet
    amount, reserved, round_id, reference = wallet_movement(event)
    wallet.balance += amount
    wallet.reserved += reserved
    wallet.version = event.originator_version
    wallet.position = position
    batch.dirty_wallets.add(key)
    line = StatementLine(
        position=event.originator_version,
        kind=name,
        amount=amount,
        reserved_change=reserved,
        balance_after=wallet.balance,
        round_id=round_id,
        reference=reference,
        at=_iso(event.timestamp),
    )
    batch.lines.append((key, position, line))


_ROUND_FACT_TYPES: frozenset[type[Any]] = frozenset(ROUND_FACTS.values())
_TABLE_FACT_TYPES: frozenset[type[Any]] = frozenset(TABLE_FACTS.values())
_WALLET_EVENT_TYPES: tuple[type[Any], ...] = tuple(
    cls
    for cls in (
        getattr(Wallet, name, None)
        for name in ("Opened", "Deposited", "Withdrawn", "FundsReserved", "RoundSettled", "ReservationReleased")
    )
    if isinstance(cls, type)
)
PROJECTED_TOPICS: tuple[str, ...] = tuple(
    sorted(
        {get_topic(RoundRecord.Started)}
        | {get_topic(cls) for cls in _ROUND_FACT_TYPES}
        | {get_topic(TABLE_FACTS["round_finished"])}
        | {get_topic(cls) for cls in _WALLET_EVENT_TYPES}
    )
)
"""The stored-event topics that change a view; every other notification only moves the position."""
_PROJECTED_CLASSES = frozenset(
    {RoundRecord.Started, TABLE_FACTS["round_finished"], *_ROUND_FACT_TYPES, *_WALLET_EVENT_TYPES}
)


@functools.lru_cache(maxsize=1024)
def _projected(topic: str) -> bool:
    """Whether a stored topic's events change a view; resolved, so that renamed classes (the library's
    ``register_topic``) are still recognised. An unknown topic raises, as decoding it would."""
    cls = resolve_topic(topic)
    return cls in _PROJECTED_CLASSES or (isinstance(cls, type) and issubclass(cls, Wallet.Event))


def _check_limit(limit: int, most: int = 1000) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= most:
        raise InvalidCommand(f"limit is 1 to {most}", field="limit")


class PositionMoved(Exception):
    """The tracking position is not the one a batch was read after: another process got there first."""


# --- the recorders: views + tracking in one transaction ----------------------------------------

Item = tuple[int, Any]  # (log position, decoded domain event or None for a notification that changes no view)


class ReadModelRecorder(TrackingRecorder, ABC):
    """A tracking recorder that also holds the views and writes both in one transaction."""

    @abstractmethod
    def apply(self, application_name: str, expected: int | None, items: Sequence[Item]) -> None:
        """Project ``items`` and record the last one's position, atomically.

        ``expected``: the position the items were read after; the write is refused with
        :class:`PositionMoved` if the tracking record holds anything else. ``None``: the
        library's rule only (the position must grow, else ``IntegrityError``).
        """

    @abstractmethod
    def reset(self) -> None:
        """Empty every view and set every tracking position to 0, in one transaction."""

    def position(self, application_name: str) -> int:
        return self.max_tracking_id(application_name) or 0

    @abstractmethod
    def last_rounds(self, table_id: str | None, player: str | None, limit: int) -> tuple[RoundSummary, ...]: ...

    @abstractmethod
    def statement(self, wallet_key: str, after: int, limit: int) -> tuple[StatementLine, ...]: ...

    @abstractmethod
    def wallet_balance(self, wallet_key: str) -> WalletBalance | None: ...

    @abstractmethod
    def open_rounds(self, table_id: str | None) -> tuple[OpenRound, ...]: ...

    @abstractmethod
    def house_totals(self, table_id: str | None) -> HouseTotals: ...

    @staticmethod
    def _check_items(application_name: str, current: int, expected: int | None, items: Sequence[Item]) -> None:
        if expected is None:
            if current >= items[0][0]:
                raise IntegrityError(f"{application_name} position {items[0][0]} was already processed ({current})")
        elif current != expected:
            raise PositionMoved(f"{application_name}: expected position {expected}, found {current}")


# SQL shared by SQLite and PostgreSQL: %s placeholders (turned into ? for SQLite), {t} table names.
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

    def apply(self, application_name: str, expected: int | None, items: Sequence[Item]) -> None:
        if not items:
            return
        with self._transaction(commit=True) as cursor:
            current = self._lock_position(cursor, application_name)
            self._check_items(application_name, current, expected, items)
            batch = _Batch(reader=_SQLReader(self, cursor))
            for position, event in items:
                if event is not None:
                    _project(batch, position, event)
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


class SQLiteReadModelRecorder(SQLiteTrackingRecorder, _SQLViews):
    """Views and tracking in the application's SQLite file; tracking in ``pokdeng_readmodels_tracking``."""

    def __init__(self, datastore: Any, **kwargs: Any) -> None:
        super().__init__(datastore, **kwargs)
        if not self.datastore.single_row_tracking:
            raise OperationalError("the read models need single-row tracking (SINGLE_ROW_TRACKING=y)")
        self.insert_tracking_statement = (
            f"INSERT INTO {TRACKING_TABLE} VALUES (:application_name, :notification_id) "
            "ON CONFLICT (application_name) DO UPDATE SET notification_id = :notification_id "
            f"WHERE {TRACKING_TABLE}.notification_id < :notification_id RETURNING notification_id"
        )
        self.select_max_tracking_id_statement = (
            f"SELECT MAX(notification_id) FROM {TRACKING_TABLE} WHERE application_name=?"
        )

    def construct_create_table_statements(self) -> list[str]:
        # The library's statements name the table "tracking"; ours has a table of its own.
        return [
            f"CREATE TABLE IF NOT EXISTS {TRACKING_TABLE} (application_name TEXT, notification_id INTEGER, "
            "PRIMARY KEY (application_name)) WITHOUT ROWID",
            *self._view_statements(),
        ]

    def _name(self, table: str) -> str:
        return table

    def _sql(self, text: str) -> str:
        return text.replace("%s", "?")

    def _transaction(self, *, commit: bool) -> AbstractContextManager[Any]:
        return self.datastore.transaction(commit=commit)

    def _track(self, cursor: Any, tracking: Tracking) -> None:
        self._insert_tracking(cursor, tracking)


class PostgresReadModelRecorder(PostgresTrackingRecorder, _SQLViews):
    """Views and tracking in the application's PostgreSQL database (its schema)."""

    lock_suffix = " FOR UPDATE"

    def __init__(self, datastore: Any, *, tracking_table_name: str = TRACKING_TABLE, **kwargs: Any) -> None:
        super().__init__(datastore, tracking_table_name=tracking_table_name, **kwargs)
        if not self.datastore.single_row_tracking:
            raise OperationalError("the read models need single-row tracking (SINGLE_ROW_TRACKING=y)")
        from psycopg.sql import SQL

        self.sql_create_statements.extend(SQL(s).format() for s in self._view_statements())

    def _name(self, table: str) -> str:
        if table == TRACKING_TABLE:
            table = self.tracking_table_name
        schema = self.datastore.schema.replace('"', '""')
        return f'"{schema}"."{table}"'

    def _sql(self, text: str) -> str:
        return text

    def _transaction(self, *, commit: bool) -> AbstractContextManager[Any]:
        return self.datastore.transaction(commit=commit)

    def _track(self, cursor: Any, tracking: Tracking) -> None:
        self._insert_tracking(cursor, tracking)


class POPOReadModelRecorder(POPOTrackingRecorder, ReadModelRecorder):
    """In-memory views for unit tests: the batch is built first, then written with the position under one lock."""

    def __init__(self) -> None:
        super().__init__()
        self._clear()

    def _clear(self) -> None:
        self._rounds: dict[str, _Round] = {}
        self._history: list[RoundSummary] = []
        self._by_player: dict[str, list[RoundSummary]] = {}
        self._wallets: dict[str, _Wallet] = {}
        self._lines: dict[str, list[StatementLine]] = {}
        self._house: dict[str, _House] = {}

    def load_round(self, round_id: str) -> _Round | None:
        found = self._rounds.get(round_id)
        return None if found is None else found.copy()

    def load_wallet(self, key: str) -> _Wallet | None:
        found = self._wallets.get(key)
        return None if found is None else _Wallet(**found.__dict__)

    def apply(self, application_name: str, expected: int | None, items: Sequence[Item]) -> None:
        if not items:
            return
        with self._database_lock:
            current = self._max_tracking_ids[application_name] or 0
            self._check_items(application_name, current, expected, items)
            batch = _Batch(reader=self)
            for position, event in items:
                if event is not None:
                    _project(batch, position, event)
            # Nothing below can fail: the views and the position change together.
            for rid in batch.dirty_rounds:
                state = batch.rounds.get(rid)
                if state is None:
                    self._rounds.pop(rid, None)
                else:
                    self._rounds[rid] = state
            for summary in batch.closed:
                self._history.append(summary)
                for player in summary.players:
                    self._by_player.setdefault(player.player, []).append(summary)
            for key in batch.dirty_wallets:
                wallet = batch.wallets.get(key)
                if wallet is not None:
                    self._wallets[key] = wallet
            for key, _position, line in batch.lines:
                self._lines.setdefault(key, []).append(line)
            for table, delta in batch.house.items():
                house = self._house.setdefault(table, _House())
                house.house_net += delta.house_net
                house.commission += delta.commission
                house.rounds += delta.rounds
                house.settled += delta.settled
                house.voided += delta.voided
                house.position = delta.position
            self._insert_tracking(Tracking(application_name, items[-1][0]))

    def reset(self) -> None:
        with self._database_lock:
            self._clear()
            for name in list(self._max_tracking_ids):
                self._max_tracking_ids[name] = 0

    def last_rounds(self, table_id: str | None, player: str | None, limit: int) -> tuple[RoundSummary, ...]:
        with self._database_lock:
            source = self._history if player is None else self._by_player.get(player, [])
            chosen = [s for s in source if table_id is None or s.table_id == table_id]
            return tuple(chosen[-limit:])

    def statement(self, wallet_key: str, after: int, limit: int) -> tuple[StatementLine, ...]:
        with self._database_lock:
            lines = [line for line in self._lines.get(wallet_key, []) if line.position > after]
            return tuple(lines[:limit])

    def wallet_balance(self, wallet_key: str) -> WalletBalance | None:
        with self._database_lock:
            wallet = self._wallets.get(wallet_key)
            return None if wallet is None else wallet.as_balance()

    def open_rounds(self, table_id: str | None) -> tuple[OpenRound, ...]:
        with self._database_lock:
            chosen = [r for r in self._rounds.values() if table_id is None or r.table_id == table_id]
            return tuple(r.as_open() for r in sorted(chosen, key=lambda r: r.started_position))

    def house_totals(self, table_id: str | None) -> HouseTotals:
        with self._database_lock:
            chosen = [h for t, h in self._house.items() if table_id is None or t == table_id]
            return HouseTotals(
                house_net=sum(h.house_net for h in chosen),
                commission=sum(h.commission for h in chosen),
                rounds=sum(h.rounds for h in chosen),
                settled=sum(h.settled for h in chosen),
                voided=sum(h.voided for h in chosen),
            )


# --- eventsourcing's projection interface ------------------------------------------------------


class ReadModelProjection(Projection[ReadModelRecorder]):
    """The library's per-event projection, for ``eventsourcing.projection.ProjectionRunner``.

    ``ProjectionRunner(application_class=PokdengApp, projection_class=ReadModelProjection,
    view_class=recorder_class(env), env=env)`` keeps the same views live on a backend that
    supports subscriptions (PostgreSQL, POPO); SQLite has none: use :meth:`ReadModels.catch_up`.
    """

    name = TRACKING_NAME
    topics = PROJECTED_TOPICS

    def process_event(self, domain_event: Any, tracking: Tracking) -> None:
        self.view.apply(tracking.application_name, None, [(tracking.notification_id, domain_event)])


def recorder_class(env: Mapping[str, str] | None = None, app_name: str = "pokdeng") -> type[ReadModelRecorder]:
    """The view class for the persistence module that ``env`` selects."""
    module = _environment(env, app_name).get(InfrastructureFactory.PERSISTENCE_MODULE, "") or "eventsourcing.popo"
    if module.startswith("eventsourcing.sqlite"):
        return SQLiteReadModelRecorder
    if module.startswith("eventsourcing.postgres"):
        return PostgresReadModelRecorder
    if module.startswith("eventsourcing.popo"):
        return POPOReadModelRecorder
    raise OperationalError(f"no read-model recorder for persistence module {module!r}")


def _environment(env: Mapping[str, str] | None, app_name: str = "pokdeng") -> Environment:
    """The settings as the application reads them (``os.environ``, then ``env``; ``POKDENG_<KEY>``
    over ``<KEY>``), so that the views land in the application's store; ``POKDENG_READMODELS_<KEY>``
    overrides both for the read models alone."""
    merged = dict(os.environ)
    merged.update(env or {})
    prefix = app_name.upper() + "_"
    own = TRACKING_NAME.upper() + "_"
    for key, value in list(merged.items()):
        if key.startswith(prefix) and not key.startswith(own) and len(key) > len(prefix):
            merged[key[len(prefix) :]] = value
    return Environment(TRACKING_NAME, merged)


# --- the public face ------------------------------------------------------------------------


class ReadModels:
    """The read models of one application store.

    ``ReadModels(env)`` takes the application's eventsourcing settings (the same store: the same
    SQLite file or PostgreSQL database and schema); ``ReadModels.for_app(app)`` takes them from a
    running application. Without ``PERSISTENCE_MODULE`` the views are in memory (POPO). An
    in-memory SQLite database (``:memory:``) cannot be shared: use a file. Nothing is read until
    :meth:`catch_up` (or :meth:`run_in_background`) is given the application.
    """

    def __init__(self, env: Mapping[str, str] | None = None, app_name: str = "pokdeng") -> None:
        environment = _environment(env, app_name)
        self.factory = InfrastructureFactory.construct(environment)
        recorder = self.factory.tracking_recorder(recorder_class(env, app_name))
        assert isinstance(recorder, ReadModelRecorder)
        self.recorder: ReadModelRecorder = recorder
        self.projection = ReadModelProjection(view=self.recorder)
        self.page_size = PAGE_SIZE
        self._lock = threading.Lock()  # one catch-up at a time in this process
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._subscription: Any = None
        self._background_app: Application[Any] | None = None
        self._interval = 0.1
        self.error: BaseException | None = None  # the last error the background thread met

    @classmethod
    def for_app(cls, app: Application[Any]) -> ReadModels:
        """Read models in the store of ``app`` (from the settings it was made with)."""
        return cls(dict(app.env), app.name)

    # -- processing ------------------------------------------------------------------------

    def position(self, app_name: str = "pokdeng") -> int:
        """The log position of the last notification in the views (0: none)."""
        return self.recorder.position(app_name)

    def catch_up(self, app: Application[Any]) -> int:
        """Project every notification after the tracked position; return how many were processed.

        Pages of ``page_size`` notifications, each in one transaction with its last position.
        Returns once a page comes back short (the log's end when it was read).
        """
        done = 0
        with self._lock:
            while True:
                after = self.recorder.position(app.name)
                page = app.recorder.select_notifications(start=after + 1, limit=self.page_size)
                if not page:
                    return done
                items = [(n.id, self._decode(app, n)) for n in page]
                try:
                    self._apply(app.name, after, items)
                except PositionMoved:
                    continue  # another process projected part of it: read again from its position
                done += len(page)
                if len(page) < self.page_size:
                    return done

    def _apply(self, app_name: str, after: int, items: Sequence[Item]) -> None:
        for attempt in range(5):
            try:
                self.recorder.apply(app_name, after, items)
                return
            except (OperationalError, InterfaceError):
                if attempt == 4:
                    raise
                self._stopping.wait(0.05 * 2**attempt)

    @staticmethod
    def _decode(app: Application[Any], notification: Notification) -> DomainEventProtocol[Any] | None:
        if not _projected(notification.topic):
            return None  # seeds, request records, table facts the views don't use: never decoded
        return app.mapper.to_domain_event(notification)

    def run_in_background(self, app: Application[Any], interval: float = 0.1) -> None:
        """Keep the views up to date in a thread until :meth:`stop`.

        With a store that pushes (PostgreSQL LISTEN/NOTIFY, POPO) the thread wakes on each new
        notification through ``app.recorder.subscribe``; with SQLite it polls every ``interval`` s.
        Either way the work is :meth:`catch_up`, so batches and exactly-once are the same.
        """
        if self._thread is not None:
            raise RuntimeError("the read models are already running in the background")
        self._stopping.clear()
        self._background_app = app
        self._interval = interval
        self.error = None
        self._thread = threading.Thread(target=self._run, args=(app, interval), name="pokdeng-readmodels", daemon=True)
        self._thread.start()

    def _run(self, app: Application[Any], interval: float) -> None:
        while not self._stopping.is_set():
            try:
                self.catch_up(app)
                try:
                    subscription = app.recorder.subscribe(gt=self.position(app.name))
                except RuntimeError:  # SQLite's recorder has no subscriptions (the library says "not implemented")
                    subscription = None
                if subscription is None:
                    while not self._stopping.wait(interval):
                        self.catch_up(app)
                    return
                self._subscription = subscription
                with subscription:
                    if self._stopping.is_set():
                        return
                    # eventsourcing 9.5.6's POPO subscription starts reading before it listens:
                    # an event recorded in between would wake nobody. Catching up once more, now
                    # that it listens, takes in whatever was recorded before that.
                    self.catch_up(app)
                    seen = self.position(app.name)
                    for notification in subscription:
                        if self._stopping.is_set():
                            return
                        if notification.id > seen:  # else already in the views (a page ran past it)
                            self.catch_up(app)
                            seen = self.position(app.name)
                return
            except Exception as error:  # keep going after a passing fault (the position is safe)
                self.error = error
                self._stopping.wait(max(interval, 0.5))
            finally:
                self._subscription = None

    def stop(self) -> None:
        """Stop the background thread (if any) and wait for it."""
        self._stopping.set()
        subscription = self._subscription
        if subscription is not None:
            subscription.stop()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def wait(self, position: int, timeout: float = 5.0, app_name: str = "pokdeng") -> None:
        """Block until the views include ``position`` (TimeoutError after ``timeout`` s)."""
        self.recorder.wait(app_name, position, timeout=timeout)

    def rebuild(self, app: Application[Any] | None = None) -> int:
        """Drop every view and tracking position, then replay the log from zero.

        With no ``app`` the background thread's application is used (if one runs); with
        neither, the views are emptied and the next :meth:`catch_up` replays. Returns how
        many notifications were replayed.
        """
        background = self._background_app if self._thread is not None else None
        interval = self._interval
        if background is not None:
            self.stop()
        try:
            with self._lock:
                self.recorder.reset()
            target = app or background
            return self.catch_up(target) if target is not None else 0
        finally:
            if background is not None:
                self.run_in_background(background, interval)

    def close(self) -> None:
        self.stop()
        self.factory.close()

    def __enter__(self) -> ReadModels:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- queries ---------------------------------------------------------------------------

    def last_rounds(
        self, table_id: str | None = None, player: str | None = None, limit: int = 10
    ) -> tuple[RoundSummary, ...]:
        """The last ``limit`` closed rounds (of a table, of a player, or both), oldest first.

        Play order is the order in which rounds closed (their ``round_closed`` positions); for
        one table that is also the order of round numbers.
        """
        _check_limit(limit)
        return self.recorder.last_rounds(table_id, player, limit)

    def statement(self, wallet_id: str, after: int = 0, limit: int = 100) -> tuple[StatementLine, ...]:
        """A wallet's movements after its stream version ``after``, with the running balance.

        Lines are the same as ``PokdengApp.wallet_statement`` (``position`` is the wallet's
        version). An unknown wallet (or one the views have not reached yet) has none.
        """
        _check_limit(limit)
        if isinstance(after, bool) or not isinstance(after, int) or after < 0:
            raise InvalidCommand("after must not be negative", field="after")
        return self.recorder.statement(wallet_uuid(wallet_id).hex, after, limit)

    def wallet_balance(self, wallet_id: str) -> WalletBalance | None:
        """A wallet's balance and reserved funds as the views have them (None: not seen)."""
        return self.recorder.wallet_balance(wallet_uuid(wallet_id).hex)

    def open_rounds(self, table_id: str | None = None) -> tuple[OpenRound, ...]:
        """Rounds started and not closed, in the order they started."""
        return self.recorder.open_rounds(table_id)

    def house_totals(self, table_id: str | None = None) -> HouseTotals:
        """The house's ledger over every table (or one): its net as banker, the commission, round counts."""
        return self.recorder.house_totals(table_id)


__all__ = [
    "PAGE_SIZE",
    "PROJECTED_TOPICS",
    "TRACKING_NAME",
    "TRACKING_TABLE",
    "HouseTotals",
    "OpenRound",
    "POPOReadModelRecorder",
    "PlayerResult",
    "PositionMoved",
    "PostgresReadModelRecorder",
    "ReadModelProjection",
    "ReadModelRecorder",
    "ReadModels",
    "RoundSummary",
    "SQLiteReadModelRecorder",
    "WalletBalance",
    "recorder_class",
]
