"""The record's loaders and caches: each aggregate loaded and checked, a round's private shoe, a view's events.

``Loading`` is the base of ``PokdengApp``'s reads (``queries.Queries``) and what the write side loads
through (``attempt.Attempt``): ``load_wallet``, ``load_table``, ``load_round`` (each stream checked against
the id it claims, and a round or table's chain recomputed when folded from the store: ``StreamForged``
otherwise), ``read_rounds`` (many rounds' cold loads, each stream read once for both the aggregate and its
view's events), the shoe of an open round (unsealed from the vault once, then remembered), and the events of a
round's view (read only once). It owns its caches: the shoes, the views' events and their locks.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application

from pokdeng_core import table_events as te
from pokdeng_core.errors import InvalidCommand
from pokdeng_core.limits import check_id
from pokdeng_core.round_state import Shoe, attach_shoe, shoe_client_seed
from pokdeng_service.application.errors import NotFound, stream_forged
from pokdeng_service.application.views import RecordedEvent
from pokdeng_service.store import aggregates as ag
from pokdeng_service.store import fastpaths, integrity
from pokdeng_service.store.aggregates import RoundRecord, SealedSeed, TableRecord, Wallet
from pokdeng_service.store.facts import fact_of
from pokdeng_service.store.sessions import WalletSessions, load_sessions, sessions_uuid
from pokdeng_service.store.vault import SeedVault

CACHE_SIZE = 1024  # rounds whose shoe, and whose view's events, are kept


class Loading(Application[UUID]):
    """The record's loaders and their caches (``PokdengApp`` sets the vault and the clock)."""

    vault: SeedVault
    clock: Callable[[], datetime]

    def __init__(self, env: Any = None) -> None:
        super().__init__(env)
        self._shoes: OrderedDict[str, Shoe] = OrderedDict()
        self._shoes_lock = threading.Lock()
        self._view_cache: OrderedDict[UUID, tuple[RecordedEvent, ...]] = OrderedDict()
        self._view_lock = threading.Lock()

    # -- reading the record ----------------------------------------------------------------

    @staticmethod
    def to_recorded(item: Any) -> RecordedEvent:
        """A stored domain event as the record type."""
        return fact_of(item)

    def stream_events(self, uuid: UUID, gt: int | None = None, lte: int | None = None) -> tuple[RecordedEvent, ...]:
        """A stream's stored events after position ``gt`` up to ``lte``, read afresh from the store."""
        return tuple(fact_of(item) for item in self.events.get(uuid, gt=gt, lte=lte))

    def view_events(self, uuid: UUID, version: int) -> tuple[RecordedEvent, ...]:
        """A round's events up to ``version`` for its view, reading only those not read before.

        Views only: audits always read the store afresh (``round_events``), so that an edit of
        the stored rows is seen by a running server too.
        """
        with self._view_lock:
            known = self._view_cache.get(uuid, ())
            if known:
                self._view_cache.move_to_end(uuid)
        last = known[-1].position if known else 0
        if last > version:
            return tuple(e for e in known if e.position <= version)
        if last < version:
            known = known + self.stream_events(uuid, gt=last, lte=version)
            with self._view_lock:
                self._view_cache[uuid] = known
                while len(self._view_cache) > CACHE_SIZE:
                    self._view_cache.popitem(last=False)
        return known

    def extend_view_events(self, uuid: UUID, events: tuple[RecordedEvent, ...]) -> None:
        """Add the events a command just saved to the round's view cache, when they follow on."""
        with self._view_lock:
            known = self._view_cache.get(uuid, ())
            last = known[-1].position if known else 0
            if events[0].position == last + 1:
                self._view_cache[uuid] = known + events
                self._view_cache.move_to_end(uuid)
                while len(self._view_cache) > CACHE_SIZE:
                    self._view_cache.popitem(last=False)

    # -- loading ---------------------------------------------------------------------------

    def get_checked(self, uuid: UUID, cls: type[Any], what: str, ident: str) -> Any:
        """The aggregate of stream ``uuid``, if it is a ``cls`` and the stream is what it claims.

        Its uuid must be the uuid of the id it names, and the chain of a round or table folded
        from the store must recompute (``integrity.verified_project``; a cached aggregate was
        checked when it was first loaded). A stream that fails is refused: ``StreamForged``,
        with an alert, and evicted from the cache."""
        try:
            aggregate = self.repository.get(uuid, projector_func=integrity.verified_project)
        except AggregateNotFoundError:
            raise NotFound(f"{what} {ident!r} not found", **{what: ident}) from None
        except integrity.StreamIntegrityError as error:
            self.evict_stream(uuid)
            raise stream_forged(error.stream, ident, uuid, error.problem) from None
        problem = integrity.identity_problem(aggregate)
        if problem is not None:
            self.evict_stream(uuid)
            claimed = integrity.identity(aggregate)
            raise stream_forged(claimed[0] if claimed else what, ident, uuid, problem)
        if not isinstance(aggregate, cls):
            raise NotFound(f"{what} {ident!r} not found", **{what: ident})
        return aggregate

    def read_rounds(self, round_ids: Iterable[str]) -> dict[str, tuple[RoundRecord, tuple[RecordedEvent, ...]]]:
        """The rounds the aggregate cache does not hold, each with its view's events, its stream read once.

        Many rounds' cold loads at once (a page of ``ListRounds``): each stream's rows are read once, the
        streams together (``fastpaths.stream_rows``: one query per ``STREAMS_PER_QUERY`` streams on SQLite),
        and those rows are both folded into the aggregate, its chain recomputed and its identity checked as
        ``get_checked`` does, and kept as its view's events (``view_events``' cache); the aggregate is cached
        as ``load_round`` would have. No snapshot is looked up: rounds are never snapshotted (with a
        snapshot interval for them, nothing is read here). A round that is cached already, or that this load
        would refuse (not found, not a round, a stream that fails its checks, an id that is not one), is not
        in the answer: ``load_round`` reads it (and refuses it, with its alert) as usual. Each record answered is
        the cached aggregate itself: read it, never change it."""
        if RoundRecord in (self.snapshotting_intervals or {}):
            return {}
        wanted: dict[UUID, str] = {}
        for round_id in round_ids:
            with contextlib.suppress(InvalidCommand):
                check_id(round_id, "round_id")
                uuid = ag.round_uuid(round_id)
                if not self._cached(uuid):
                    wanted[uuid] = round_id
        if not wanted:
            return {}
        out: dict[str, tuple[RoundRecord, tuple[RecordedEvent, ...]]] = {}
        cache = self.repository.cache
        for uuid, rows in fastpaths.stream_rows(self.recorder, wanted).items():
            try:
                stored = [self.mapper.to_domain_event(row) for row in rows]
                record = integrity.verified_project(None, stored)
            except Exception:  # a row that cannot be read, a stream that fails its checks: ``load_round`` says which
                continue
            if not isinstance(record, RoundRecord) or integrity.identity_problem(record) is not None:
                continue
            events = tuple(fact_of(item) for item in stored)
            if cache is not None and not self._cached(uuid):  # (not over one a command saved meanwhile)
                cache.put(uuid, record)
            self._remember_view(uuid, events)
            out[wanted[uuid]] = (record, events)
        return out

    def _cached(self, uuid: UUID) -> bool:
        """Whether the aggregate cache holds the stream's aggregate."""
        cache = self.repository.cache
        if cache is None:
            return False
        try:
            cache.get(uuid)
        except KeyError:
            return False
        return True

    def _remember_view(self, uuid: UUID, events: tuple[RecordedEvent, ...]) -> None:
        """Keep a round's events read from its start as its view's, unless the cache holds more of them already."""
        with self._view_lock:
            known = self._view_cache.get(uuid, ())
            if known and known[-1].position >= events[-1].position:
                return
            self._view_cache[uuid] = events
            self._view_cache.move_to_end(uuid)
            while len(self._view_cache) > CACHE_SIZE:
                self._view_cache.popitem(last=False)

    def evict_stream(self, uuid: UUID) -> None:
        """Forget a refused stream's cached aggregate: it is read (and refused) afresh next time."""
        cache = self.repository.cache
        if cache is not None:
            with contextlib.suppress(KeyError):
                cache.get(uuid, evict=True)

    def load_wallet(self, wallet_id: str) -> Wallet:
        wallet: Wallet = self.get_checked(ag.wallet_uuid(wallet_id), Wallet, "wallet", wallet_id)
        return wallet

    def load_table(self, table_id: str) -> TableRecord:
        table: TableRecord = self.get_checked(ag.table_uuid(table_id), TableRecord, "table", table_id)
        return table

    def load_sessions(self, player: str) -> WalletSessions | None:
        """The player's sessions with the platform's wallet (None: none handed over yet; ``StreamForged``: a stream
        that is not the player's)."""
        try:
            return load_sessions(self.repository, player)
        except ValueError as error:
            self.evict_stream(sessions_uuid(player))
            raise stream_forged("wallet sessions", player, sessions_uuid(player), str(error)) from None

    def load_round(self, round_id: str, with_shoe: bool = True) -> RoundRecord:
        record: RoundRecord = self.get_checked(ag.round_uuid(round_id), RoundRecord, "round", round_id)
        return self.with_round_shoe(record) if with_shoe else record

    def with_round_shoe(self, record: RoundRecord) -> RoundRecord:
        """The round (loaded without its shoe) with its private shoe attached, if it is open."""
        if not record.state.is_closed:
            record.state = fastpaths.with_shoe(record.state, self._shoe(record))
        return record

    def server_seed(self, round_id: str) -> bytes:
        """The round's server seed: unsealed from the vault (or remembered since the round started)."""
        return self._shoe(self.load_round(round_id, with_shoe=False)).server_seed

    def _shoe(self, record: RoundRecord) -> Shoe:
        """The round's shoe for its state now. A remembered shoe serves only while it was shuffled with
        the client seed the round has now (``shoe_client_seed``): before the deal of a round with
        contributions it holds the server seed alone, and once the deal fixed the client seed the cards
        are shuffled afresh from the remembered seed (never dealt from a stale shoe)."""
        with self._shoes_lock:
            shoe = self._shoes.get(record.round_id)
            if shoe is not None:
                self._shoes.move_to_end(record.round_id)
        if shoe is not None and shoe.server_seed and shoe.client_seed == shoe_client_seed(record.state):
            return shoe
        if shoe is not None and shoe.server_seed:
            seed = shoe.server_seed  # checked against the commitment again by attach_shoe
        else:
            sealed: SealedSeed = self.get_checked(ag.seed_uuid(record.round_id), SealedSeed, "round", record.round_id)
            seed = self.vault.open(sealed.nonce, sealed.sealed, record.round_id, record.id, sealed.aad_version)
        attached = attach_shoe(record.state, seed).shoe
        assert attached is not None
        self.remember_shoe(record.round_id, attached)
        return attached

    def returned_in_time(self, table: TableRecord) -> bool:
        """Whether the table's disconnected banker is back within its profile's reconnection window,
        measured from the disconnection as recorded (``clock`` is now)."""
        bid = table.state.rules.banker_bid
        if bid is None or not table.state.banker_leaving:
            return False
        item: Any
        for item in self.events.get(table.id, desc=True, limit=64):
            if getattr(item, "kind", None) == te.BankerDisconnected.kind:
                away: datetime = item.timestamp
                return (self.clock() - away).total_seconds() <= bid.reconnect_seconds
        return False

    def holds_shoe(self, round_id: str) -> bool:
        """Whether this process holds the round's shoe (it started the round, or checked and unsealed it)."""
        with self._shoes_lock:
            return round_id in self._shoes

    def remember_shoe(self, round_id: str, shoe: Shoe) -> None:
        with self._shoes_lock:
            self._shoes[round_id] = shoe
            while len(self._shoes) > CACHE_SIZE:
                self._shoes.popitem(last=False)


__all__ = ["CACHE_SIZE", "Loading"]
