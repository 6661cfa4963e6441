"""Event-sourced aggregates on the ``eventsourcing`` library.

* ``FoldedStream``: a chained stream whose state is a pure machine's fold (``record`` records a
  decision of it); the round's and the table's are:
* ``RoundRecord``: one stream per round. Each event wraps one core round event
  (pokdeng_core.events) with the command id that caused it, the profile and
  engine versions, and a hash-chain digest. State is ``pokdeng_core.machine.evolve``
  folded over the stream.
* ``TableRecord``: seats, banker, round counter and the house's ledger of the
  table's rounds; state is ``pokdeng_core.table.evolve_table`` over the stream.
* ``Wallet``: balance and reservations by round.
* ``SealedSeed``: a round's server seed, encrypted until the reveal.
* ``CommandRecord``: the first result of a client request id (idempotent retries).

Event classes are versioned with ``class_version``; upcasting follows the
library's ``upcast_vX_vY`` convention (docs/events.md).
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Mapping
from dataclasses import fields as dataclass_fields
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, cast

from eventsourcing.domain import Aggregate, event
from eventsourcing.persistence import JSONTranscoder, Transcoding
from eventsourcing.utils import register_topic

from pokdeng_core import events as round_events
from pokdeng_core import table_events
from pokdeng_core.deciding import Decision
from pokdeng_core.profiles import ENGINE_VERSION, get_profile
from pokdeng_core.round_evolve import evolve
from pokdeng_core.round_state import RoundState
from pokdeng_core.table_state import TableState, evolve_table
from pokdeng_service.store import fastpaths
from pokdeng_service.store.codec import chain_digest, from_data, genesis_digest, to_data, wallet_digest

NAMESPACE = uuid.UUID("5b0f1a52-6d6e-4f3c-9c57-706f6b64656e")


@lru_cache(maxsize=4096)
def round_uuid(round_id: str) -> uuid.UUID:
    return uuid.uuid5(NAMESPACE, f"round:{round_id}")


@lru_cache(maxsize=4096)
def table_uuid(table_id: str) -> uuid.UUID:
    return uuid.uuid5(NAMESPACE, f"table:{table_id}")


@lru_cache(maxsize=4096)
def wallet_uuid(wallet_id: str) -> uuid.UUID:
    return uuid.uuid5(NAMESPACE, f"wallet:{wallet_id}")


def transactions_uuid(round_id: str) -> uuid.UUID:
    """The stream of a round's transactions with the platform's wallet (``wallet.outbox.WalletTransactions``)."""
    return uuid.uuid5(NAMESPACE, f"wallet-tx:{round_id}")


@lru_cache(maxsize=4096)
def seed_uuid(round_id: str) -> uuid.UUID:
    return uuid.uuid5(NAMESPACE, f"seed:{round_id}")


def command_ids(request_id: str, scope: str = "") -> tuple[str, str]:
    """The two ``command_id`` a request's events may carry: its id, or, when the stream's last event was another
    sender's with that same id, the id followed by its sender's scope in parentheses (``bet-0 (player:mallory)``,
    docs/events.md; ``attempt.Attempt.command_id`` chooses, the audits accept either)."""
    return request_id, f"{request_id} ({scope})"


@lru_cache(maxsize=4096)
def command_uuid(request_id: str, scope: str = "") -> uuid.UUID:
    """The stream of a request's record: request ids are scoped to the caller that sent them
    (``Principal.scope``); the empty scope is that of records written before scopes existed.
    (Cached: a command asks for its record's id twice, once to look it up and once to create it.)"""
    if not scope:
        return uuid.uuid5(NAMESPACE, f"request:{request_id}")
    return uuid.uuid5(NAMESPACE, f"request:{scope}\x00{request_id}")


def _now() -> datetime:
    return datetime.now(tz=UTC)


# The library fast paths live in fastpaths (each checked against the library by a test);
# their old names here are kept for callers.
project = fastpaths.project
with_shoe = fastpaths.with_shoe
_copy_aggregate = fastpaths.copy_aggregate


class ChainedStream(Aggregate):
    """An aggregate whose facts carry a hash chain over the stream."""

    last_digest: str
    stream_id: str  # the round id or table id the stream belongs to
    last_command_id: str  # the command id of the stream's last event ("" before the first, or in an old snapshot)

    class Fact(Aggregate.Event):
        """One core fact: ``kind`` names it, ``data`` holds its fields."""

        class_version = 1
        kind: str
        stream_id: str
        data: dict[str, Any]
        command_id: str
        engine: str
        digest: str

        def apply(self, aggregate: Aggregate) -> None:
            cast(ChainedStream, aggregate).apply_fact(self)

    def apply_fact(self, fact: ChainedStream.Fact) -> None:
        self.last_digest = fact.digest
        self.last_command_id = fact.command_id  # (``attempt.Attempt.command_id``: consecutive commands differ)

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return _copy_aggregate(self, memo)

    def record_fact(
        self, fact_class: type[ChainedStream.Fact], kind: str, data: dict[str, Any], command_id: str
    ) -> None:
        timestamp = _now()
        position = self.version + 1
        digest = chain_digest(self.last_digest, kind, data, position, command_id, timestamp.isoformat())
        self.trigger_event(
            fact_class,
            kind=kind,
            stream_id=self.stream_id,
            data=data,
            command_id=command_id,
            engine=ENGINE_VERSION,
            digest=digest,
            timestamp=timestamp,
        )


def _fact_classes(owner: type[ChainedStream], kinds: tuple[type[Any], ...]) -> dict[str, type[ChainedStream.Fact]]:
    """One stored event class per core event, named after it (``RoundRecord.BetPlaced``), so topics read well."""
    out: dict[str, type[ChainedStream.Fact]] = {}
    for core_class in kinds:
        name = core_class.__name__
        sub = type(name, (owner.Fact,), {"__qualname__": f"{owner.__qualname__}.{name}", "__module__": __name__})
        setattr(owner, name, sub)
        out[core_class.kind] = cast(type[ChainedStream.Fact], sub)
    return out


class FoldedStream(ChainedStream):
    """A chained stream whose state is a pure machine's fold over its facts (a round's, a table's).

    ``record`` records a decision of the machine (``deciding.Decision``) and ``apply_fact`` folds a
    stored fact; a subclass names its machine's events by kind (``CORE_EVENTS``), the stored class of
    each (``FACTS``, from ``_fact_classes``) and its fold (``fold``)."""

    CORE_EVENTS: Mapping[str, type[Any]]
    FACTS: Mapping[str, type[ChainedStream.Fact]]
    state: Any

    fold: Callable[[Any, Any], Any]
    """The machine's fold of one core event into the state (its ``evolve``): each subclass defines it."""

    def decided(self, before: Any, after: Any) -> Any:
        """The state once a decision is recorded: the one it folded (``after``); ``before``, the state it
        was decided on."""
        return after

    def apply_fact(self, fact: ChainedStream.Fact) -> None:
        super().apply_fact(fact)
        if "_recording" in self.__dict__:
            return  # ``record`` sets the state its decision folded, once every fact is on the chain
        self.state = self.fold(self.state, from_data(self.CORE_EVENTS[fact.kind], fact.data))

    def record(self, decision: Decision[Any, Any], command_id: str) -> None:
        """Record a decision: ``record(decide_and_fold(state, command), command_id)``.

        Each event becomes a fact on the hash chain; the state becomes the decision's (folded by the
        core while deciding, not again here: ``decided``).
        """
        core_events, after = decision
        before = self.state
        recorded = 0
        self.__dict__["_recording"] = True
        try:
            for core_event in core_events:
                self.record_fact(self.FACTS[core_event.kind], core_event.kind, to_data(core_event), command_id)
                recorded += 1
        except BaseException:
            for core_event in core_events[:recorded]:  # the state stays true to the facts triggered
                self.state = self.fold(self.state, core_event)
            raise
        finally:
            del self.__dict__["_recording"]
        self.state = self.decided(before, after)


class RoundRecord(FoldedStream):
    round_id: str
    table_id: str
    state: RoundState
    CORE_EVENTS = round_events.EVENT_BY_KIND

    class Started(Aggregate.Created):
        round_id: str
        table_id: str

    @staticmethod
    def create_id(round_id: str, table_id: str) -> uuid.UUID:
        return round_uuid(round_id)

    @event(Started)
    def __init__(self, round_id: str, table_id: str) -> None:
        self.round_id = round_id
        self.table_id = table_id
        self.stream_id = round_id
        self.state = RoundState()
        self.last_digest = genesis_digest(round_id)

    def fold(self, state: RoundState, core_event: round_events.RoundEvent) -> RoundState:
        return evolve(state, core_event)

    def decided(self, before: RoundState, after: RoundState) -> RoundState:
        """The decision's state, with the round's shoe kept (``pokdeng_core.machine.Decision``)."""
        shoe = before.shoe
        return after if shoe is None or after.shoe is not None else with_shoe(after, shoe)


ROUND_FACTS = RoundRecord.FACTS = _fact_classes(RoundRecord, round_events.EVENT_TYPES)


class TableRecord(FoldedStream):
    table_id: str
    state: TableState
    CORE_EVENTS = table_events.TABLE_EVENT_BY_KIND

    class Opened(Aggregate.Created):
        table_id: str

    @staticmethod
    def create_id(table_id: str) -> uuid.UUID:
        return table_uuid(table_id)

    @event(Opened)
    def __init__(self, table_id: str) -> None:
        self.table_id = table_id
        self.stream_id = table_id
        self.state = TableState()
        self.last_digest = genesis_digest(f"table:{table_id}")

    def fold(self, state: TableState, core_event: table_events.TableEvent) -> TableState:
        return evolve_table(state, core_event)


TABLE_FACTS = TableRecord.FACTS = _fact_classes(TableRecord, table_events.TABLE_EVENT_TYPES)


WALLET_KINDS = ("Deposited", "Withdrawn", "FundsReserved", "RoundSettled", "ReservationReleased")
"""The kinds (class names) of a wallet's events after its ``Opened``."""


def wallet_genesis(wallet_id: str) -> str:
    """The digest a wallet's chain starts from (its ``Opened`` at position 1 carries none)."""
    return genesis_digest(f"wallet:{wallet_id}")


def wallet_step(balance: int, reservations: dict[str, int], kind: str, data: Any) -> tuple[int, dict[str, int]]:
    """The wallet after one of its events (``kind``, its fields ``data``): (balance, reservations by round).

    The one fold of a wallet's money: the aggregate, its chain and the audits use it.
    ``reservations`` is not changed in place (a new dict when the event changes it)."""
    if kind == "Deposited":
        return balance + data["amount"], reservations
    if kind == "Withdrawn":
        return balance - data["amount"], reservations
    if kind == "FundsReserved":
        round_id = data["round_id"]
        return balance, {**reservations, round_id: reservations.get(round_id, 0) + data["amount"]}
    if kind == "RoundSettled":
        rest = {k: v for k, v in reservations.items() if k != data["round_id"]}
        return balance + data["net"], rest
    if kind == "ReservationReleased":
        return balance, {k: v for k, v in reservations.items() if k != data["round_id"]}
    raise ValueError(f"not a wallet movement: {kind}")


class _Movement:
    """What every wallet event does when applied: the wallet's fold (``wallet_step``) and its chain."""

    def apply(self, aggregate: Aggregate) -> None:
        wallet = cast(Wallet, aggregate)
        values = self.__dict__
        wallet.balance, wallet.reservations = wallet_step(
            wallet.balance, wallet.reservations, type(self).__name__, values
        )
        digest = values.get("digest")
        if digest:  # (events stored before wallets were chained carry none)
            wallet.last_digest = digest


class Wallet(Aggregate):
    """A player's money: ``balance`` includes reserved funds; ``available`` is what may be staked or withdrawn.

    Every event after ``Opened`` carries ``digest``, the wallet's hash chain over its events and the
    state after each (``codec.wallet_digest``, docs/audit.md); ``last_digest`` is the chain's end.
    Events stored before wallets were chained have no digest (it reads as ``""``) and leave the
    chain where it was: at the wallet's genesis, for a wallet that has only such events."""

    last_digest: str
    currency: str = "THB"  # (a snapshot taken before currencies has none: THB)

    class Opened(Aggregate.Created):
        wallet_id: str
        currency: str = "THB"  # ISO 4217 (absent from wallets opened before currencies: THB)

    class Deposited(_Movement, Aggregate.Event):
        amount: int
        request_id: str
        digest: str = ""  # absent from events stored before wallets were chained

    class Withdrawn(_Movement, Aggregate.Event):
        amount: int
        request_id: str
        digest: str = ""

    class FundsReserved(_Movement, Aggregate.Event):
        round_id: str
        amount: int
        digest: str = ""

    class RoundSettled(_Movement, Aggregate.Event):
        round_id: str
        released: int
        net: int
        digest: str = ""

    class ReservationReleased(_Movement, Aggregate.Event):
        round_id: str
        amount: int
        reason: str
        digest: str = ""

    @staticmethod
    def create_id(wallet_id: str) -> uuid.UUID:
        return wallet_uuid(wallet_id)

    @event(Opened)
    def __init__(self, wallet_id: str, currency: str = "THB") -> None:
        self.wallet_id = wallet_id
        self.currency = currency
        self.balance = 0
        self.reservations: dict[str, int] = {}
        self.last_digest = wallet_genesis(wallet_id)

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return _copy_aggregate(self, memo)

    @property
    def reserved(self) -> int:
        return sum(self.reservations.values())

    @property
    def available(self) -> int:
        return self.balance - self.reserved

    def _record(self, event_class: type[Aggregate.Event], data: dict[str, Any]) -> None:
        """Trigger one wallet event, its digest chained to the last (over the state it leaves)."""
        kind = event_class.__name__
        timestamp = _now()
        balance, reservations = wallet_step(self.balance, self.reservations, kind, data)
        previous = self.__dict__.get("last_digest") or wallet_genesis(self.wallet_id)
        digest = wallet_digest(previous, kind, data, self.version + 1, timestamp.isoformat(), balance, reservations)
        self.trigger_event(event_class, timestamp=timestamp, digest=digest, **data)

    def deposit(self, amount: int, request_id: str) -> None:
        self._record(Wallet.Deposited, {"amount": amount, "request_id": request_id})

    def withdraw(self, amount: int, request_id: str) -> None:
        self._record(Wallet.Withdrawn, {"amount": amount, "request_id": request_id})

    def reserve(self, round_id: str, amount: int) -> None:
        self._record(Wallet.FundsReserved, {"round_id": round_id, "amount": amount})

    def settle(self, round_id: str, released: int, net: int) -> None:
        self._record(Wallet.RoundSettled, {"round_id": round_id, "released": released, "net": net})

    def release(self, round_id: str, amount: int, reason: str) -> None:
        self._record(Wallet.ReservationReleased, {"round_id": round_id, "amount": amount, "reason": reason})


def wallet_movement(event: Any) -> tuple[int, int, str, str]:
    """What one wallet event does: (balance change, reservation change, round id, reference)."""
    name = type(event).__name__
    if name == "Deposited":
        return event.amount, 0, "", event.request_id
    if name == "Withdrawn":
        return -event.amount, 0, "", event.request_id
    if name == "FundsReserved":
        return 0, event.amount, event.round_id, ""
    if name == "RoundSettled":
        return event.net, -event.released, event.round_id, ""
    if name == "ReservationReleased":
        return 0, -event.amount, event.round_id, event.reason
    return 0, 0, "", ""


class SealedSeed(Aggregate):
    """A round's server seed, AES-GCM sealed with the vault key (never stored in the clear before the reveal).

    ``aad_version`` is the version of the seal's associated data (``vault.seal_aad``); seals
    stored before it was recorded have none, and are of version 1."""

    class Sealed(Aggregate.Created):
        round_id: str
        nonce: str
        sealed: str
        key_id: str
        aad_version: int = 1  # absent from seals stored before it (their AAD is the round id alone)

    @staticmethod
    def create_id(round_id: str, nonce: str, sealed: str, key_id: str) -> uuid.UUID:
        return seed_uuid(round_id)

    @event(Sealed)
    def __init__(self, round_id: str, nonce: str, sealed: str, key_id: str, aad_version: int = 1) -> None:
        self.round_id = round_id
        self.nonce = nonce
        self.sealed = sealed
        self.key_id = key_id
        self.aad_version = aad_version


class CommandRecord(Aggregate):
    """The first outcome of a request id: a retry returns it and writes nothing."""

    class Accepted(Aggregate.Created):
        request_id: str
        fingerprint: str
        result: dict[str, Any]
        scope: str = ""  # the caller's namespace (``Principal.scope``); "" in records written before scopes

    @staticmethod
    def create_id(request_id: str, fingerprint: str, result: dict[str, Any], scope: str = "") -> uuid.UUID:
        return command_uuid(request_id, scope)

    @event(Accepted)
    def __init__(self, request_id: str, fingerprint: str, result: dict[str, Any], scope: str = "") -> None:
        self.request_id = request_id
        self.fingerprint = fingerprint
        self.result = result
        self.scope = scope


class TableStateAsDict(Transcoding):
    """Snapshots of a table hold its core state; the profile is stored by name, version and options."""

    type = TableState
    name = "pokdeng_table_state"

    def encode(self, obj: TableState) -> dict[str, Any]:
        data = {f.name: getattr(obj, f.name) for f in dataclass_fields(obj) if f.name != "profile"}
        profile = obj.profile
        data["profile"] = None if profile is None else [profile.name, profile.version, profile.options]
        return data

    def decode(self, data: dict[str, Any]) -> TableState:
        profile_data = data.pop("profile")
        profile = None if profile_data is None else get_profile(profile_data[0], profile_data[1], **profile_data[2])
        return from_data(TableState, {**data, "profile": profile})  # (lists as tuples, as a core event's)


def register_transcodings(transcoder: JSONTranscoder) -> None:
    transcoder.register(TableStateAsDict())


# Stores written before the service was laid out by layer name this module by its old path.
register_topic("pokdeng_service.aggregates", sys.modules[__name__])
