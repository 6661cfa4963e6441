"""One try at a command: ``Attempt`` holds who sends it and the aggregates it loaded (each once, each checked),
and ``Record`` is what it needs of the application to load them.

The pipeline (``pipeline.execute``) makes an ``Attempt`` for each try of a command; the handlers and the wallet
port load through it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol
from uuid import UUID

from eventsourcing.domain import Aggregate

from pokdeng_service.application.errors import NotFound, stream_forged
from pokdeng_service.application.principal import Principal
from pokdeng_service.application.views import CommandResult, RecordedEvent, RoundView, TableView, WalletView
from pokdeng_service.store import aggregates as ag
from pokdeng_service.store import integrity
from pokdeng_service.store.aggregates import CommandRecord, RoundRecord, TableRecord, Wallet
from pokdeng_service.store.roundlog import RoundLog
from pokdeng_service.store.sessions import WalletSessions
from pokdeng_service.store.signing import KeyRing
from pokdeng_service.store.vault import SeedVault


class Record(Protocol):
    """What the pipeline and the handlers need of the application (``Record``)."""

    vault: SeedVault
    signing_keys: KeyRing  # the signed tree heads' keys (application/checkpoints.py)

    def load_wallet(self, wallet_id: str) -> Wallet: ...
    def load_sessions(self, player: str) -> WalletSessions | None: ...
    def load_table(self, table_id: str) -> TableRecord: ...
    def load_round(self, round_id: str, with_shoe: bool = True) -> RoundRecord: ...
    def with_round_shoe(self, record: RoundRecord) -> RoundRecord: ...
    def finished_rounds(
        self, table_id: str, after_round_no: int = 0, upto: int | None = None
    ) -> list[tuple[int, str, str]]: ...
    def command_record(self, record_id: UUID) -> CommandRecord | None: ...
    def recorded_result(self, record: CommandRecord) -> CommandResult: ...
    def save(self, *objs: Any, **kwargs: Any) -> Any: ...
    def evict(self, aggregates: Iterable[Aggregate]) -> None: ...
    def after_save(self, aggregates: Iterable[Aggregate], stream: str, events: tuple[RecordedEvent, ...]) -> None: ...
    def view_of(self, aggregate: Aggregate) -> WalletView | TableView | RoundView | None: ...
    def to_recorded(self, item: Any) -> RecordedEvent: ...
    def holds_shoe(self, round_id: str) -> bool: ...
    def returned_in_time(self, table: TableRecord) -> bool: ...
    def load_round_log(self) -> RoundLog | None: ...
    def log_events(self) -> list[RecordedEvent]: ...
    def log_origin_prefix(self) -> str: ...

    log_lock: threading.Lock


@dataclass
class Attempt:
    """One try at a command: who sends it, and the aggregates loaded so far (each once)."""

    app: Record
    principal: Principal
    request_id: str
    loaded: dict[Any, Aggregate] = field(default_factory=dict)
    held: list[threading.Lock] = field(default_factory=list)
    command_ids: dict[UUID, str] = field(default_factory=dict)  # per stream: the id its events get

    def command_id(self, stream: Aggregate) -> str:
        """The ``command_id`` this command's events get on a round's or table's ``stream``: the request id,
        unless the stream's last event is another command's with that same id, which another sender may
        have used (request ids are each sender's own: ``Principal.scope``); then the request id and this
        sender's scope, ``"<request id> (<scope>)"``. So consecutive commands on a stream never share a
        command id, and a round's events still group by command (docs/audit.md) whatever ids its senders
        chose. Kept for the attempt: every event this command records on the stream gets the same one."""
        chosen = self.command_ids.get(stream.id)
        if chosen is None:
            chosen = self.request_id
            if getattr(stream, "last_command_id", "") == chosen:
                chosen = ag.command_ids(chosen, self.principal.scope)[1]
            self.command_ids[stream.id] = chosen
        return chosen

    def hold(self, lock: threading.Lock) -> None:
        """Hold ``lock`` until this attempt's save is done (a stream that every command of a kind writes,
        such as the store's log of closed rounds: this process's commands take turns instead of
        conflicting and retrying)."""
        lock.acquire()
        self.held.append(lock)

    def release(self) -> None:
        while self.held:
            self.held.pop().release()

    def wallet(self, wallet_id: str) -> Wallet:
        found = self.loaded.get(("wallet", wallet_id))
        if found is None:
            found = self.loaded[("wallet", wallet_id)] = self.app.load_wallet(wallet_id)
        assert isinstance(found, Wallet)
        return found

    def table(self, table_id: str) -> TableRecord:
        found = self.loaded.get(("table", table_id))
        if found is None:
            found = self.loaded[("table", table_id)] = self.app.load_table(table_id)
        assert isinstance(found, TableRecord)
        return found

    def round(self, round_id: str, *, sealed: bool = False) -> RoundRecord:
        """The round with its shoe, if its table opened it (``integrity.opening_problem``, checked
        before its seed is unsealed; a round whose shoe this process holds, because it started the
        round or checked it before, needs no second look at its table); else ``StreamForged``.
        ``sealed``: the round without its shoe (a void whose seed cannot be unsealed)."""
        found = self.loaded.get(("round", round_id))
        if found is None and self.app.holds_shoe(round_id):
            found = self.loaded[("round", round_id)] = self.app.load_round(round_id)
        if found is None:
            record = self.app.load_round(round_id, with_shoe=False)
            try:
                table: TableRecord | None = self.table(record.table_id)
            except NotFound:
                table = None
            problem = integrity.opening_problem(record, table)
            if problem is not None:
                raise stream_forged("round", round_id, record.id, problem)
            found = self.loaded[("round", round_id)] = record if sealed else self.app.with_round_shoe(record)
        assert isinstance(found, RoundRecord)
        return found

    def available(self, wallet_id: str) -> int:
        """A wallet's available funds, 0 for a wallet that does not exist."""
        try:
            return self.wallet(wallet_id).available
        except NotFound:
            return 0

    def wallets(self) -> list[Wallet]:
        return [a for a in self.loaded.values() if isinstance(a, Wallet)]

    def tables(self) -> list[TableRecord]:
        return [a for a in self.loaded.values() if isinstance(a, TableRecord)]


__all__ = ["Attempt", "Record"]
