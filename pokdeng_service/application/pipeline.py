"""The one command pipeline: check, authorise, load, decide, record, save atomically, answer.

``execute(app, principal, request_id, command)`` is what ``Record.handle`` runs for every
command:

1. the request id and every field of the command are checked at once (``RequestInvalid``
   lists all violations); a player may act only for itself (``Command.actor``);
2. the command's handler (registered with ``@handler(CommandType)``) loads what it needs
   through the ``Attempt`` (each aggregate at most once an attempt; each checked against the
   id it claims, and a round against its table's opening of it: ``StreamForged`` otherwise),
   asks the pure core to decide, and records the events on the aggregates;
3. the aggregates are saved with a ``CommandRecord`` of the request, in one transaction.

The request's record is not read first: the save itself finds a repeated request id,
because the record's first event then conflicts with the stored one (nothing of the
transaction is written). Only when the work or the save fails is the record looked up,
and a repeated request returns its first result (``replayed=True``); one with the same id
and another fingerprint is a ``DuplicateRequest``. A version conflict with another writer
evicts the cached aggregates and tries again, at most ``MAX_ATTEMPTS`` times.

A refused command writes nothing, with one exception: an ``Outcome`` that is ``Refused`` (a room's
StartRound that opens no round because its banker cannot cover it, the role ended, or because every
seated player was short of funds and unseated). Its events are saved as a request of the service's
own, and the error is raised after the save; the client's request id is not used, so its retry
decides afresh. Like any refusal, it first looks the client's request id up: one already used
answers with its first result (or ``DuplicateRequest``), and nothing is written.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError

from pokdeng_core import limits
from pokdeng_core.errors import InsufficientFunds
from pokdeng_service.application import telemetry
from pokdeng_service.application.commands import BankerCommand, Command
from pokdeng_service.application.errors import (
    Conflict,
    DuplicateRequest,
    FieldViolation,
    FundsWithheld,
    NotFound,
    PermissionDenied,
    RequestInvalid,
    stream_forged,
)
from pokdeng_service.application.principal import SYSTEM, Principal
from pokdeng_service.application.views import CommandResult, RecordedEvent, RoundView, TableView, WalletView, built
from pokdeng_service.store import aggregates as ag
from pokdeng_service.store import integrity
from pokdeng_service.store.aggregates import CommandRecord, RoundRecord, TableRecord, Wallet
from pokdeng_service.store.roundlog import RoundLog
from pokdeng_service.store.signing import KeyRing
from pokdeng_service.store.vault import SeedVault


class Record(Protocol):
    """What the pipeline and the handlers need of the application (``Record``)."""

    vault: SeedVault
    signing_keys: KeyRing  # the signed tree heads' keys (application/checkpoints.py)

    def load_wallet(self, wallet_id: str) -> Wallet: ...
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

    log_lock: threading.Lock


MAX_ATTEMPTS = 8
C = TypeVar("C", bound=Command)


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

    def require_self(self, player: str | None, what: str) -> None:
        """A player token may only act for its own player."""
        if not self.principal.may_act_for(player):
            target = f" for {player!r}" if player else ""
            raise PermissionDenied(f"{self.principal.describe()} may not {what}{target}", player=player or "")


@dataclass(frozen=True)
class Refused:
    """A refusal that records what it found (a room's StartRound that opens no round: the banker's role ended,
    or every seated player was unseated): the events are saved as the service's own request ``request_id``
    (scope ``internal``, out of every client's reach: the client's request id stays unused, and its retry is a
    new decision), then ``error`` is raised. ``request_id`` is a function of the stream's state, so replicas
    that find the same thing at once record it once (the others conflict, retry and decide again)."""

    error: Exception
    request_id: str


@dataclass(frozen=True)
class Outcome:
    """What a handler did: the aggregates to save (in order) and the one whose stream answers the command;
    ``refused``: saved, and still refused."""

    saved: tuple[Aggregate, ...]
    target: Aggregate
    stream: str
    stream_id: str
    refused: Refused | None = None


Handler = Callable[[Attempt, Any], Outcome]
HANDLERS: dict[type[Command], Handler] = {}


def handler(command_type: type[C]) -> Callable[[Callable[[Attempt, C], Outcome]], Callable[[Attempt, C], Outcome]]:
    """Register the handler of ``command_type`` (one per type)."""

    def register(function: Callable[[Attempt, C], Outcome]) -> Callable[[Attempt, C], Outcome]:
        if command_type in HANDLERS:
            raise TypeError(f"{command_type.__name__} has a handler already")
        HANDLERS[command_type] = function
        return function

    return register


def check(request_id: object, command: Command) -> None:
    """Every violation of the request id and the command's fields, raised together."""
    problems: list[FieldViolation] = []
    problem = limits.id_problem(request_id, "request_id")
    if problem is not None:
        problems.append(FieldViolation("request_id", problem))
    problems.extend(command.violations())
    if problems:
        raise RequestInvalid(problems)


def authorise(principal: Principal, command: Command) -> None:
    """A player token acts only for itself (the banker's hand: only as the round's banker, which its
    handler checks); an auditor sends no command."""
    if principal.is_operator:
        return
    actor = command.actor
    if principal.is_player and actor is not None and actor == principal.player:
        return
    if principal.is_player and isinstance(command, BankerCommand):
        raise PermissionDenied(f"{principal.describe()} may only play the banker's hand as itself", player=actor or "")
    what = command.name.replace("_", " ")
    target = f" for {actor!r}" if actor else ""
    raise PermissionDenied(f"{principal.describe()} may not {what}{target}", player=actor or "")


def execute(app: Record, principal: Principal, request_id: str, command: Command) -> CommandResult:
    """Run ``command`` once for ``request_id``: its first result, whatever the number of retries."""
    check(request_id, command)
    authorise(principal, command)
    run = HANDLERS.get(type(command))
    if run is None:
        raise TypeError(f"no handler for {type(command).__name__}")
    fingerprint = command.fingerprint()
    record_id = ag.command_uuid(request_id, principal.scope)
    for _attempt in range(MAX_ATTEMPTS):
        attempt = Attempt(app, principal, request_id)
        try:
            done = None
            try:
                outcome = run(attempt, command)
            except Exception as error:
                done = app.command_record(record_id)
                if done is None:
                    disclosed = _disclosed(principal, error)
                    if disclosed is not error:
                        raise disclosed from None
                    raise
            else:
                if outcome.refused is not None:  # a refusal all the same: a used request id answers first
                    done = app.command_record(record_id)
            if done is not None:  # (outside the except clause: a DuplicateRequest has no context)
                return _replayed(app, done, fingerprint)
            target = outcome.target
            pending = list(target.pending_events)
            before = target.version - len(pending)
            result = {"stream": outcome.stream, "id": outcome.stream_id, "from": before + 1, "to": target.version}
            refused = outcome.refused
            if refused is None:
                record = CommandRecord(request_id, fingerprint, result, principal.scope)
            else:  # (the service's own request: the client's request id stays unused, for its retry)
                record = CommandRecord(refused.request_id, fingerprint, result, SYSTEM.scope)
            started = time.perf_counter()
            try:
                app.save(*outcome.saved, record)
            except IntegrityError:
                done = app.command_record(record_id)
                if done is not None:
                    return _replayed(app, done, fingerprint)
                app.evict(outcome.saved)
                telemetry.retried(command.name)
                continue
            events = tuple(app.to_recorded(item) for item in pending)
            app.after_save(outcome.saved, outcome.stream, events)
            telemetry.saved(target, events, time.perf_counter() - started)
            if refused is not None:
                raise refused.error
            return built(  # (each value of its field's type: tests/service/test_views_built.py)
                CommandResult,
                request_id=request_id,
                stream=outcome.stream,
                id=outcome.stream_id,
                events=events,
                replayed=False,
                view=app.view_of(target),
            )
        finally:
            attempt.release()
    raise Conflict(f"request {request_id!r} kept conflicting with concurrent writers; try again")


def _disclosed(principal: Principal, error: Exception) -> Exception:
    """What a refusal may tell its caller: a player learns no other wallet's funds."""
    if principal.is_player and isinstance(error, InsufficientFunds) and error.wallet != principal.player:
        return FundsWithheld(
            f"wallet {error.wallet!r} cannot cover {error.required} (its funds are not shown to other players)",
            required=error.required,
            wallet=error.wallet,
        )
    return error


def _replayed(app: Record, record: CommandRecord, fingerprint: str) -> CommandResult:
    if record.fingerprint != fingerprint:
        raise DuplicateRequest(
            f"request id {record.request_id!r} was already used for a different command", field="request_id"
        )
    return app.recorded_result(record)
