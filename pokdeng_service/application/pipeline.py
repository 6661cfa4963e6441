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

The wallet port takes part at two points (``wallet_port.WalletPort``): ``before`` a command, a step of
its own that must take the command's money first (on the platform's wallets, a stake's debits: requested
and saved, sent, and only then the command recorded, or the debits given back: ``_money_first``); and
``after`` it (the platform's credits and rollbacks of a round that closed, sent at once). The internal
wallets have neither: their money moves in the command's own transaction.

A refused command writes nothing, with one exception: an ``Outcome`` that is ``Refused`` (a room's
StartRound that opens no round because its banker cannot cover it, the role ended, or because every
seated player was short of funds and unseated). Its events are saved as a request of the service's
own, and the error is raised after the save; the client's request id is not used, so its retry
decides afresh. Like any refusal, it first looks the client's request id up: one already used
answers with its first result (or ``DuplicateRequest``), and nothing is written.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from uuid import UUID

from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError

from pokdeng_core import limits
from pokdeng_core.errors import InsufficientFunds
from pokdeng_service.application import telemetry
from pokdeng_service.application.attempt import Attempt, Record
from pokdeng_service.application.commanding import Command
from pokdeng_service.application.errors import (
    Conflict,
    DuplicateRequest,
    FieldViolation,
    FundsWithheld,
    PermissionDenied,
    RequestInvalid,
)
from pokdeng_service.application.principal import SYSTEM, Principal
from pokdeng_service.application.round_commands import BankerCommand
from pokdeng_service.application.views import CommandResult, RecordedEvent, built
from pokdeng_service.application.wallet_port import Prepared, Step, port_of
from pokdeng_service.store import aggregates as ag
from pokdeng_service.store.aggregates import CommandRecord

MAX_ATTEMPTS = 8
C = TypeVar("C", bound=Command)


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
    port = port_of(app)
    step = port.before(command)
    if step is None:
        result = _record(app, principal, request_id, command, run)
    else:
        result = _money_first(app, principal, request_id, command, run, step)
    port.after(app, result)
    return result


def _money_first(
    app: Record, principal: Principal, request_id: str, command: Command, run: Handler, step: Step
) -> CommandResult:
    """A command whose money the wallet port must take first (a stake on the platform's wallets: its debits):
    a used request id answers at once and calls nobody; else the port's step requests the money on what it
    loads (saved before any call), sends it, and only then is the command recorded (``_record``). The step
    ends in every case: what was taken for a command that was not recorded is given back (docs/wallet.md)."""
    done = app.command_record(ag.command_uuid(request_id, principal.scope))
    if done is not None:
        return _replayed(app, done, _fingerprint(app, command))
    prepared = _requested(app, principal, request_id, command, step)
    if prepared is None:  # nothing to take first (a round the store's wallets hold)
        return _record(app, principal, request_id, command, run)
    recorded = False
    try:
        try:
            prepared.send()
        except Exception as error:
            raise _disclosed(principal, error) from None
        result = _record(app, principal, request_id, command, run)
        recorded = not result.replayed  # (another writer answered this request id: the money placed nothing)
        return result
    finally:
        prepared.close(recorded)


def _requested(app: Record, principal: Principal, request_id: str, command: Command, step: Step) -> Prepared | None:
    """The step's request, saved (tried again on a conflict with another writer, like any command)."""
    for _attempt in range(MAX_ATTEMPTS):
        attempt = Attempt(app, principal, request_id)
        try:
            prepared = step(attempt, command)
        except Exception as error:
            disclosed = _disclosed(principal, error)
            if disclosed is not error:
                raise disclosed from None
            raise
        if prepared is None:
            return None
        try:
            app.save(*prepared.saved)
        except IntegrityError:
            prepared.abandon()
            continue
        except BaseException:
            prepared.abandon()
            raise
        return prepared
    raise Conflict(f"request {request_id!r} kept conflicting with concurrent writers; try again")


def _record(app: Record, principal: Principal, request_id: str, command: Command, run: Handler) -> CommandResult:
    """The handler's decision recorded with the request's record, in one transaction (tried again on a
    conflict); a used request id answers with its first result."""
    fingerprint = _fingerprint(app, command)
    record_id = ag.command_uuid(request_id, principal.scope)
    for _attempt in range(MAX_ATTEMPTS):
        attempt = Attempt(app, principal, request_id)
        try:
            outcome = _decided(app, principal, attempt, command, run, record_id)
            if isinstance(outcome, CommandRecord):  # (outside the except clause: a DuplicateRequest has no context)
                return _replayed(app, outcome, fingerprint)
            pending = list(outcome.target.pending_events)
            record = _request_record(principal, request_id, fingerprint, outcome, len(pending))
            try:
                events = _save(app, outcome, record, pending)
            except IntegrityError:
                done = app.command_record(record_id)
                if done is not None:
                    return _replayed(app, done, fingerprint)
                app.evict(outcome.saved)
                telemetry.retried(command.name)
                continue
            if outcome.refused is not None:
                raise outcome.refused.error
            return built(  # (each value of its field's type: tests/service/test_views_built.py)
                CommandResult,
                request_id=request_id,
                stream=outcome.stream,
                id=outcome.stream_id,
                events=events,
                replayed=False,
                view=app.view_of(outcome.target),
            )
        finally:
            attempt.release()
    raise Conflict(f"request {request_id!r} kept conflicting with concurrent writers; try again")


def _decided(
    app: Record, principal: Principal, attempt: Attempt, command: Command, run: Handler, record_id: UUID
) -> Outcome | CommandRecord:
    """The handler's outcome; or, when it refused and the request id is used already, the request's record
    (a used request id answers with its first result, before any refusal)."""
    try:
        outcome = run(attempt, command)
    except Exception as error:
        done = app.command_record(record_id)
        if done is not None:
            return done
        disclosed = _disclosed(principal, error)
        if disclosed is not error:
            raise disclosed from None
        raise
    if outcome.refused is not None:  # a refusal all the same: a used request id answers first
        done = app.command_record(record_id)
        if done is not None:
            return done
    return outcome


def _request_record(
    principal: Principal, request_id: str, fingerprint: str, outcome: Outcome, recorded: int
) -> CommandRecord:
    """The request's record: the stream and the versions of the ``recorded`` events it saves. A refusal that
    records is saved as the service's own request, so that the client's request id stays unused, for its
    retry."""
    target = outcome.target
    before = target.version - recorded
    result = {"stream": outcome.stream, "id": outcome.stream_id, "from": before + 1, "to": target.version}
    if outcome.refused is None:
        return CommandRecord(request_id, fingerprint, result, principal.scope)
    return CommandRecord(outcome.refused.request_id, fingerprint, result, SYSTEM.scope)


def _save(app: Record, outcome: Outcome, record: CommandRecord, pending: list[Any]) -> tuple[RecordedEvent, ...]:
    """The outcome's aggregates and the request's record saved in one transaction; the events recorded.
    ``IntegrityError``: another writer was first."""
    started = time.perf_counter()
    app.save(*outcome.saved, record)
    events = tuple(app.to_recorded(item) for item in pending)
    app.after_save(outcome.saved, outcome.stream, events)
    telemetry.saved(outcome.target, events, time.perf_counter() - started)
    return events


def _fingerprint(app: Record, command: Command) -> str:
    """The request's fingerprint; a command with secret fields keyed by the vault (``Command.fingerprint``)."""
    return command.fingerprint(app.vault.token_key if command.secrets else b"")


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
