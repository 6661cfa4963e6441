"""The pokdeng application: one entry point for every command, and what a save leaves behind.

``PokdengApp.handle(principal, request_id, command)`` runs any command of
``pokdeng_service.application.commands`` through the one pipeline
(``pokdeng_service.application.pipeline``); the handlers are in ``wallets``, ``tables`` and
``rounds``, the reads in ``queries``, the loaders and their caches in ``loading``. Every command
carries a client request id: a retry with the same id returns the first result and writes nothing.

For scripts and tests, each command is also a method named after it, taking the request id
and then the command's fields: ``app.place_bet("bet-1", "t#1", 1, "alice", 100)`` is
``app.handle(SYSTEM, "bet-1", PlaceBet("t#1", 1, "alice", 100))``.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import ApplicationRecorder, EventStore, JSONTranscoder, Mapper, Recording
from eventsourcing.utils import strtobool

from pokdeng_core.limits import MAX_AMOUNT
from pokdeng_core.round_state import attach_shoe
from pokdeng_service.application import handlers  # noqa: F401 - registers every command's handler
from pokdeng_service.application.checkpoints import LogQueries
from pokdeng_service.application.commanding import Command
from pokdeng_service.application.commands import COMMANDS
from pokdeng_service.application.errors import stream_forged
from pokdeng_service.application.pipeline import execute
from pokdeng_service.application.principal import SYSTEM, Principal
from pokdeng_service.application.queries import Queries, round_view, table_view, wallet_view
from pokdeng_service.application.views import CommandResult, RecordedEvent, RoundView, TableView, WalletView
from pokdeng_service.application.wallet_port import INTERNAL, WalletPort
from pokdeng_service.store import aggregates as ag
from pokdeng_service.store import commits, fastmapper, fastpaths, integrity
from pokdeng_service.store.aggregates import CommandRecord, RoundRecord, SealedSeed, TableRecord, Wallet
from pokdeng_service.store.roundlog import RoundLog, round_log_uuid
from pokdeng_service.store.sessions import sessions_uuid
from pokdeng_service.store.signing import KeyRing
from pokdeng_service.store.snapshots import CheckedSnapshots
from pokdeng_service.store.vault import SeedVault

__all__ = ["MAX_AMOUNT", "PokdengApp"]

_STREAM_UUID: dict[str, Callable[[str], UUID]] = {
    "round": ag.round_uuid,
    "table": ag.table_uuid,
    "wallet": ag.wallet_uuid,
    "log": round_log_uuid,
    "session": sessions_uuid,
}
_WALLET_REQUESTS = frozenset({"Deposited", "Withdrawn"})  # the wallet events that name their request


def _not_caused_by(record: CommandRecord, events: tuple[RecordedEvent, ...]) -> str | None:
    """What says the events a request's record names were not that request's, or None: each of the range
    (``from`` to ``to``) must be there, and carry the request's id (``command_id``, or the id with the
    sender's scope: ``attempt.Attempt.command_id``; a deposit's or withdrawal's ``request_id``). Another
    caller's event of the same id passes here: ``pokdeng verify --all``, which reads every record in the
    order it was saved, is what catches a record pointed at one (docs/audit.md, "command records")."""
    result = record.result
    first, last = result["from"], result["to"]
    if [e.position for e in events] != list(range(first, last + 1)):
        return f"its result names {result['stream']} {result['id']} positions {first} to {last}, which the store lacks"
    if result["stream"] not in ("round", "table", "wallet", "session"):
        return None  # (the store's log names no request on its events)
    ids = ag.command_ids(record.request_id, record.scope)
    for event in events:
        if result["stream"] == "wallet":
            made_by = event.data.get("request_id") if event.kind in _WALLET_REQUESTS else record.request_id
            caused = made_by == record.request_id
        else:
            caused = event.command_id in ids or event.position == 1  # (a creation row carries the id too, or none)
        if not caused:
            return f"its result names {result['stream']} {result['id']} position {event.position}, another request's"
    return None


class PokdengApp(Queries, LogQueries, Application[UUID]):
    """The round engine's application: tables, rounds, wallets and the audit record."""

    name = "pokdeng"
    # eventsourcing's class settings:
    snapshotting_intervals = {Wallet: 100, TableRecord: 100, RoundLog: 100}  # noqa: RUF012
    snapshotting_projectors = {Wallet: fastpaths.project, TableRecord: fastpaths.project}  # noqa: RUF012
    env = {"AGGREGATE_CACHE_MAXSIZE": "2000", "COMPRESSOR_TOPIC": ""}  # noqa: RUF012

    def __init__(
        self, env: dict[str, str] | None = None, vault: SeedVault | None = None, signing_keys: KeyRing | None = None
    ) -> None:
        super().__init__(env)
        # One writer per store (the embedded SQLite default: one server process per file):
        # the aggregate cache is then authoritative and commands read nothing back. A stale
        # cached aggregate can only come from another writer, which the version check of the
        # save catches; the conflicting aggregates are then evicted and the command retried.
        self.single_writer = strtobool(self.env.get("POKDENG_SINGLE_WRITER", "n") or "n")
        if self.single_writer:
            self.repository.fastforward = False
        self.vault = vault or SeedVault.ephemeral()
        self.clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC)  # the shell's clock (tests set it)
        self.signing_keys = signing_keys or KeyRing()  # signed tree heads (no key: SignTreeHead is refused)
        self.log_lock = threading.Lock()  # held by a command from its load of the round log to its save
        self._names: dict[UUID, str] = {}
        # Per table, how far past position 2n + 2 round n's round_finished was last found
        # (seatings and bids push it on): where audits look first. Only a hint: what is
        # found there is checked, and the search falls back to walking the stream.
        self.audit_hints: dict[str, int] = {}
        # Where the rounds' money is booked: the store's wallets, or the platform's (``wallet.remote.attach``).
        self.wallet_port: WalletPort = INTERNAL
        # Rounds found to hold no platform transactions (``application.wallet_port.platform_holds``). Kept only with one
        # writer, this server, booking the store's wallets: then no one can give such a round an outbox later.
        self.store_wallet_rounds: OrderedDict[str, None] = OrderedDict()

    # -- one store: the same surface as a partitioned service --------------------------------

    @property
    def apps(self) -> list[PokdengApp]:
        return [self]

    def app_for(self, identifier: str, kind: str = "table") -> PokdengApp:
        return self

    # -- commands --------------------------------------------------------------------------

    def handle(self, principal: Principal, request_id: str, command: Command) -> CommandResult:
        """Run ``command`` for ``principal`` once per ``request_id`` (a retry answers the first result)."""
        return execute(self, principal, request_id, command)

    if TYPE_CHECKING:  # each command's method is installed below, from the command types

        def __getattr__(self, name: str) -> Callable[..., CommandResult]: ...

    # -- saving ----------------------------------------------------------------------------

    def save(self, *objs: Any, **kwargs: Any) -> list[Recording[UUID]]:
        """``Application.save`` with the library's event collection and snapshots replaced by ``fastpaths``."""
        processing_event = fastpaths.collect(objs, kwargs)
        recordings = self._record(processing_event)
        fastpaths.take_snapshots(self, processing_event)  # (of the aggregates as saved: no read back)
        self._notify(recordings)
        return recordings

    def construct_recorder(self) -> ApplicationRecorder:
        """The library's recorder; on SQLite, the commands waiting on the store saved a group to a transaction
        (``store.commits``: each command atomic in its own savepoint, one commit)."""
        recorder: ApplicationRecorder = commits.grouped(super().construct_recorder())
        return recorder

    def construct_mapper(self) -> Mapper[UUID]:
        """The library's mapper, plain rows read and written by ``fastmapper.PlainMapper`` (tests check them)."""
        return fastmapper.plain_mapper_of(super().construct_mapper())

    def register_transcodings(self, transcoder: JSONTranscoder) -> None:
        super().register_transcodings(transcoder)
        ag.register_transcodings(transcoder)

    def construct_snapshot_store(self) -> EventStore[UUID]:
        """The library's snapshot store, handing out only snapshots that agree with their events
        (``store.snapshots.CheckedSnapshots``: a wallet's or table's that does not is withheld, and
        the stream folded from its start, with an alert)."""
        recorder = self.factory.aggregate_recorder(purpose="snapshots")
        return CheckedSnapshots(self.mapper, recorder, self.events)

    def command_record(self, record_id: UUID) -> CommandRecord | None:
        """The stored first outcome of a request (its uuid checked against the request id it names)."""
        try:
            record: Any = self.repository.get(record_id)
        except AggregateNotFoundError:
            return None
        problem = integrity.identity_problem(record)
        if problem is not None or not isinstance(record, CommandRecord):
            self.evict_stream(record_id)
            claimed = integrity.identity(record)
            name = claimed[1] if claimed else ""
            raise stream_forged("request", name, record_id, problem or "it is not a request record")
        return record

    def recorded_result(self, record: CommandRecord) -> CommandResult:
        """The first result of a request, read back from its stream (a retry's answer)."""
        result = record.result
        stream, stream_id = result["stream"], result["id"]
        events = self.stream_events(_STREAM_UUID[stream](stream_id), result["from"] - 1, result["to"])
        problem = _not_caused_by(record, events)
        if problem is not None:  # (an edited record: never another request's answer)
            raise stream_forged("request", record.request_id, record.id, problem)
        return CommandResult(request_id=record.request_id, stream=stream, id=stream_id, events=events, replayed=True)

    def evict(self, aggregates: Iterable[Aggregate]) -> None:
        """Forget cached copies of aggregates whose save conflicted, so that the retry reads the store."""
        cache = self.repository.cache
        if cache is None:
            return
        for aggregate in aggregates:
            with contextlib.suppress(KeyError):
                cache.get(aggregate.id, evict=True)

    def after_save(self, aggregates: Iterable[Aggregate], stream: str, events: tuple[RecordedEvent, ...]) -> None:
        """Keep what was just saved: the aggregates in the cache (the next command finds them at their new
        version instead of replaying the events just written), a new round's shoe from the seed just
        sealed (the server seed alone until the deal fixes the client seed), the shoe a deal shuffled,
        and the round's events for its view. (The cache still fast-forwards from the store on every
        load, so other writers are seen; a remembered shoe is checked against the round's client seed.)"""
        saved = list(aggregates)
        for sealed in saved:
            if isinstance(sealed, SealedSeed):
                record = next((a for a in saved if isinstance(a, RoundRecord)), None)
                if record is not None and record.round_id == sealed.round_id:
                    try:
                        seed = self.vault.open(
                            sealed.nonce, sealed.sealed, sealed.round_id, record.id, sealed.aad_version
                        )
                        shoe = attach_shoe(record.state, seed).shoe
                    except Exception:  # the first command will unseal it (and say what is wrong)
                        shoe = None
                    if shoe is not None:
                        self.remember_shoe(sealed.round_id, shoe)
        for aggregate in saved:  # a deal that fixed the client seed shuffled the shoe: remember that one
            if isinstance(aggregate, RoundRecord) and not aggregate.state.is_closed:
                dealt = aggregate.state.shoe
                if dealt is not None and dealt.client_seed is not None:
                    self.remember_shoe(aggregate.round_id, dealt)
        if stream == "round" and events:
            target = next(a for a in saved if isinstance(a, RoundRecord))
            self.extend_view_events(target.id, events)
        cache = self.repository.cache
        if cache is None or not self.repository.deepcopy_from_cache:
            return
        for aggregate in saved:
            if isinstance(aggregate, RoundRecord):
                if aggregate.state.shoe is not None:  # the shoe is private: never kept in the cache
                    aggregate.state = fastpaths.with_shoe(aggregate.state, None)
            elif not isinstance(aggregate, TableRecord | Wallet | RoundLog):
                continue
            cache.put(aggregate.id, aggregate)

    def view_of(self, aggregate: Aggregate) -> WalletView | TableView | RoundView | None:
        """The view of a stream's aggregate as just saved (a command's answer, with no read back)."""
        if isinstance(aggregate, RoundRecord):
            return round_view(aggregate, self.view_events(aggregate.id, aggregate.version))
        if isinstance(aggregate, TableRecord):
            return table_view(aggregate)
        if isinstance(aggregate, Wallet):
            return wallet_view(aggregate)
        return None


def _command_method(command_type: type[Command]) -> Callable[..., CommandResult]:
    """``app.<name>(request_id, *fields)``: the command sent by the service itself (``SYSTEM``)."""

    def send(self: PokdengApp, request_id: str, *args: Any, **kwargs: Any) -> CommandResult:
        return self.handle(SYSTEM, request_id, command_type(*args, **kwargs))

    send.__name__ = send.__qualname__ = command_type.name
    send.__doc__ = f"Send ``{command_type.__name__}`` as the service itself: {command_type.__doc__ or ''}".strip()
    return send


for _command_type in COMMANDS:
    setattr(PokdengApp, _command_type.name, _command_method(_command_type))
