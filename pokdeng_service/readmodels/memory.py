"""The read models in memory (POPO), for unit tests and the in-memory store: dicts beside the tracking.

A batch is folded first, then written with its position under the recorder's one lock, so the
views and the position change together.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence

from eventsourcing.persistence import Tracking
from eventsourcing.popo import POPOTrackingRecorder

from pokdeng_service.application.views import StatementLine
from pokdeng_service.readmodels.fold import Batch, Item, Project, project_event
from pokdeng_service.readmodels.models import (
    HouseFold,
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
from pokdeng_service.readmodels.recorder import ReadModelRecorder


class POPOReadModelRecorder(POPOTrackingRecorder, ReadModelRecorder):
    """In-memory views for unit tests: the batch is built first, then written with the position under one lock."""

    def __init__(self) -> None:
        super().__init__()
        self._clear()

    def _clear(self) -> None:
        self._rounds: dict[str, RoundFold] = {}
        self._history: list[RoundSummary] = []
        self._by_player: dict[str, list[RoundSummary]] = {}
        self._wallets: dict[str, WalletFold] = {}
        self._lines: dict[str, list[StatementLine]] = {}
        self._house: dict[str, HouseFold] = {}
        self._tables: dict[str, TableFold] = {}
        self._table_ids: list[str] = []  # sorted
        self._wallet_ids: list[tuple[str, str]] = []  # (wallet id, key), sorted

    def load_round(self, round_id: str) -> RoundFold | None:
        found = self._rounds.get(round_id)
        return None if found is None else found.copy()

    def load_wallet(self, key: str) -> WalletFold | None:
        found = self._wallets.get(key)
        return None if found is None else WalletFold(**found.__dict__)

    def load_table(self, table_id: str) -> TableFold | None:
        found = self._tables.get(table_id)
        return None if found is None else TableFold(**found.__dict__)

    def apply(
        self, application_name: str, expected: int | None, items: Sequence[Item], project: Project = project_event
    ) -> None:
        if not items:
            return
        with self._database_lock:
            current = self._max_tracking_ids[application_name] or 0
            self._check_items(application_name, current, expected, items)
            batch = Batch(reader=self)
            for position, event in items:
                if event is not None:
                    project(batch, position, event)
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
                    if key not in self._wallets:
                        bisect.insort(self._wallet_ids, (wallet.wallet_id, key))
                    self._wallets[key] = wallet
            for table_id in batch.dirty_tables:
                row = batch.tables.get(table_id)
                if row is not None:
                    if table_id not in self._tables:
                        bisect.insort(self._table_ids, table_id)
                    self._tables[table_id] = row
            for key, _position, line in batch.lines:
                self._lines.setdefault(key, []).append(line)
            for table, delta in batch.house.items():
                house = self._house.setdefault(table, HouseFold())
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

    def list_rounds(self, query: RoundFilter, before_position: int | None, limit: int) -> tuple[RoundSummary, ...]:
        table_id, closed_from, closed_to, outcome = query.table_id, query.closed_from, query.closed_to, query.outcome
        with self._database_lock:
            source = self._history if query.player is None else self._by_player.get(query.player, [])
            end = len(source)  # both lists are in closing order (positions grow)
            if before_position is not None:
                end = bisect.bisect_left(source, before_position, key=lambda s: s.closed_position)
            chosen: list[RoundSummary] = []
            for summary in _newest_first(source, end):
                if len(chosen) == limit:
                    break
                if (
                    (table_id is None or summary.table_id == table_id)
                    and (closed_from is None or summary.closed_at >= closed_from)
                    and (closed_to is None or summary.closed_at < closed_to)
                    and (outcome is None or summary.outcome == outcome)
                ):
                    chosen.append(summary)
            return tuple(chosen)

    def list_tables(self, after: str | None, limit: int, profile: str | None) -> tuple[TableSummary, ...]:
        with self._database_lock:
            start = 0 if after is None else bisect.bisect_right(self._table_ids, after)
            chosen: list[TableSummary] = []
            for table_id in self._table_ids[start:]:
                if len(chosen) == limit:
                    break
                table = self._tables[table_id]
                if profile is None or table.profile == profile:
                    chosen.append(table.as_summary())
            return tuple(chosen)

    def list_wallets(self, after: str | None, limit: int) -> tuple[WalletBalance, ...]:
        with self._database_lock:
            start = 0
            if after is not None:
                start = bisect.bisect_right(self._wallet_ids, after, key=lambda entry: entry[0])
            return tuple(self._wallets[key].as_balance() for _id, key in self._wallet_ids[start : start + limit])

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


def _newest_first(source: list[RoundSummary], end: int) -> Iterable[RoundSummary]:
    for index in range(end - 1, -1, -1):
        yield source[index]


__all__ = ["POPOReadModelRecorder"]
