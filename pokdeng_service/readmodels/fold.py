"""The pure fold: decoded events in, changes of the read models out (a :class:`Batch`), no I/O.

A recorder opens a transaction, makes a :class:`Batch` whose ``reader`` loads the rows the fold
needs (an open round, a wallet) inside it, folds a page of events into the batch with
:func:`project_event` one by one, then writes the batch and the page's last position together.

Which stored events change a view is decided here too: :data:`PROJECTED_TOPICS` (what
``ReadModelProjection`` subscribes to) and :func:`is_projected` (which notifications ``catch_up``
decodes; every other one only moves the position). Event kinds are the core events' ``kind``
constants; the wallet's are its event classes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from eventsourcing.utils import get_topic, resolve_topic

from pokdeng_core.events import BetPlaced, RoundClosed, RoundOpened, RoundSettled, RoundVoided, SideBetPlaced
from pokdeng_core.table_events import RoundFinished, RoundStarted, TableOpened
from pokdeng_service.application.views import StatementLine
from pokdeng_service.readmodels.models import HouseFold, PlayerResult, RoundFold, RoundSummary, TableFold, WalletFold
from pokdeng_service.store.aggregates import ROUND_FACTS, TABLE_FACTS, RoundRecord, Wallet, wallet_movement

Item = tuple[int, Any]  # (log position, decoded domain event or None for a notification that changes no view)


class _Reader(Protocol):
    """Reads of the views inside the transaction that will write the batch."""

    def load_round(self, round_id: str) -> RoundFold | None: ...

    def load_wallet(self, key: str) -> WalletFold | None: ...

    def load_table(self, table_id: str) -> TableFold | None: ...


@dataclass
class Batch:
    """The view changes of a run of notifications, written together with its last position."""

    reader: _Reader
    rounds: dict[str, RoundFold | None] = field(default_factory=dict)  # None: closed (delete the open row)
    dirty_rounds: set[str] = field(default_factory=set)
    wallets: dict[str, WalletFold | None] = field(default_factory=dict)
    dirty_wallets: set[str] = field(default_factory=set)
    lines: list[tuple[str, int, StatementLine]] = field(default_factory=list)  # (wallet key, log position, line)
    closed: list[RoundSummary] = field(default_factory=list)
    house: dict[str, HouseFold] = field(default_factory=dict)  # deltas by table
    tables: dict[str, TableFold | None] = field(default_factory=dict)  # None: not in the directory
    dirty_tables: set[str] = field(default_factory=set)
    events: int = 0

    def round(self, round_id: str) -> RoundFold | None:
        if round_id not in self.rounds:
            self.rounds[round_id] = self.reader.load_round(round_id)
        return self.rounds[round_id]

    def wallet(self, key: str) -> WalletFold | None:
        if key not in self.wallets:
            self.wallets[key] = self.reader.load_wallet(key)
        return self.wallets[key]

    def table(self, table_id: str) -> TableFold | None:
        if table_id not in self.tables:
            self.tables[table_id] = self.reader.load_table(table_id)
        return self.tables[table_id]


Project = Callable[[Batch, int, Any], None]
"""The fold of one event into a batch (:func:`project_event`); a recorder's ``apply`` takes the one to use."""


def _iso(value: datetime) -> str:
    return value.isoformat()


def project_event(batch: Batch, position: int, event: Any) -> None:
    """Fold one decoded domain event into the batch (pure bookkeeping, no I/O beyond the batch's reads)."""
    batch.events += 1
    if isinstance(event, RoundRecord.Started):
        _round_started(batch, position, event)
    elif type(event) in _ROUND_FACT_TYPES:
        _round_fact(batch, position, event)
    elif type(event) in _TABLE_FACT_TYPES:
        if event.kind == RoundFinished.kind:
            _round_finished(batch, position, event)
        if event.kind in _DIRECTORY_KINDS:
            _table_fact(batch, position, event)
    elif isinstance(event, Wallet.Event):
        _wallet_event(batch, position, event)


def _round_started(batch: Batch, position: int, event: Any) -> None:
    if batch.round(event.round_id) is not None:
        return
    batch.rounds[event.round_id] = RoundFold(
        round_id=event.round_id,
        table_id=event.table_id,
        started_position=position,
        started_at=_iso(event.timestamp),
        last_kind=RoundStarted.kind,  # RoundRecord.Started has no core kind: named as the table's fact
        last_position=position,
        version=event.originator_version,
    )
    batch.dirty_rounds.add(event.round_id)


def _round_fact(batch: Batch, position: int, event: Any) -> None:
    kind: str = event.kind
    data: dict[str, Any] = event.data
    round_id: str = event.stream_id
    state = batch.round(round_id)
    if state is None:  # a round that began before the log did (never in practice): start it here
        state = RoundFold(
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
    if kind == RoundOpened.kind:
        state.table_id = data["table_id"]
        state.round_no = data["round_no"]
        state.profile = data["profile_name"]
        state.profile_version = data["profile_version"]
        state.banker = data["banker_player"]
    elif kind in (BetPlaced.kind, SideBetPlaced.kind):
        player = data["player"]
        state.staked[player] = state.staked.get(player, 0) + data["stake"]
    elif kind == RoundSettled.kind:
        for player, _reserved, net in data["wallets"]:
            state.nets[player] = state.nets.get(player, 0) + net
        state.house_net = data["house_net"]
        state.commission = data["commission"]
    elif kind == RoundVoided.kind:
        for player, _reserved in data["wallets"]:
            state.nets.setdefault(player, 0)
    elif kind == RoundClosed.kind:
        batch.closed.append(_summary(state, data["outcome"], position, _iso(event.timestamp)))
        batch.rounds[round_id] = None


def _summary(state: RoundFold, outcome: str, position: int, closed_at: str) -> RoundSummary:
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


def _round_finished(batch: Batch, position: int, event: Any) -> None:
    data: dict[str, Any] = event.data
    house = batch.house.setdefault(event.stream_id, HouseFold())
    house.house_net += int(data.get("house_net", 0))
    house.commission += int(data.get("commission", 0))
    house.rounds += 1
    if data.get("outcome") == "settled":
        house.settled += 1
    elif data.get("outcome") == "voided":
        house.voided += 1
    house.position = position


def _table_fact(batch: Batch, position: int, event: Any) -> None:
    """The tables directory: ``table_opened`` fills the row, ``round_started``/``round_finished`` move it."""
    kind: str = event.kind
    data: dict[str, Any] = event.data
    table_id: str = event.stream_id
    table = batch.table(table_id)
    if table is None:  # a table opened before the log began (never in practice): list it from here
        table = TableFold(table_id=table_id, opened_at=_iso(event.timestamp), opened_position=position)
        batch.tables[table_id] = table
    if kind == TableOpened.kind:
        table.profile = data["profile_name"]
        table.profile_version = data["profile_version"]
        table.seats = data["seats"]
        table.min_stake = data["min_stake"]
        table.max_stake = data["max_stake"]
        table.currency = str(data.get("currency", "THB"))  # a field newer than the first tables
        table.opened_at = _iso(event.timestamp)
        table.opened_position = position
    elif kind == RoundStarted.kind:
        table.round_no = data["round_no"]
        table.current_round_id = data["round_id"]
    elif kind == RoundFinished.kind:
        table.rounds_closed += 1
        if table.current_round_id == data["round_id"]:
            table.current_round_id = None
    table.position = position
    batch.dirty_tables.add(table_id)


def _wallet_event(batch: Batch, position: int, event: Any) -> None:
    key = event.originator_id.hex
    name = type(event).__name__
    wallet = batch.wallet(key)
    if wallet is None:
        wallet_id = getattr(event, "wallet_id", None)
        if wallet_id is None:  # not opened in the log (never in practice): keep the line under its uuid
            wallet_id = str(event.originator_id)
        # The currency is the Opened event's (wallets opened before currencies have none: THB).
        currency = getattr(event, "currency", None) if isinstance(event, Wallet.Opened) else None
        wallet = WalletFold(key=key, wallet_id=wallet_id, currency=str(currency or "THB"))
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
_DIRECTORY_KINDS = frozenset({TableOpened.kind, RoundStarted.kind, RoundFinished.kind})
_TABLE_VIEW_TYPES: frozenset[type[Any]] = frozenset(TABLE_FACTS[kind] for kind in _DIRECTORY_KINDS)
# Wallet's event classes (declared on the class since wallets were chained; an untyped name
# still reaches them, as when ``@event(...)`` made them).
_WALLET: Any = Wallet
_WALLET_EVENT_TYPES: tuple[type[Any], ...] = (
    Wallet.Opened,
    _WALLET.Deposited,
    _WALLET.Withdrawn,
    _WALLET.FundsReserved,
    _WALLET.RoundSettled,
    _WALLET.ReservationReleased,
)
PROJECTED_TOPICS: tuple[str, ...] = tuple(
    sorted(
        {get_topic(RoundRecord.Started)}
        | {get_topic(cls) for cls in _ROUND_FACT_TYPES}
        | {get_topic(cls) for cls in _TABLE_VIEW_TYPES}
        | {get_topic(cls) for cls in _WALLET_EVENT_TYPES}
    )
)
"""The stored-event topics that change a view; every other notification only moves the position."""
_PROJECTED_CLASSES = frozenset({RoundRecord.Started, *_TABLE_VIEW_TYPES, *_ROUND_FACT_TYPES, *_WALLET_EVENT_TYPES})


@functools.lru_cache(maxsize=1024)
def is_projected(topic: str) -> bool:
    """Whether a stored topic's events change a view; resolved, so that renamed classes (the library's
    ``register_topic``) are still recognised. An unknown topic raises, as decoding it would."""
    cls = resolve_topic(topic)
    return cls in _PROJECTED_CLASSES or (isinstance(cls, type) and issubclass(cls, Wallet.Event))


__all__ = ["PROJECTED_TOPICS", "Item", "Project"]
