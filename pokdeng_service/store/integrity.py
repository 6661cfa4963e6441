"""Streams are who they say they are: the identity and chain checks of a loaded stream.

Every stream's uuid is a UUID5 of the id it belongs to (``aggregates.round_uuid`` and the
others), and its first event names that id (``RoundRecord.Started.round_id``, ...). Nothing
in the library ties the two together: a row written straight into the store can claim any
id on any uuid. ``identity(aggregate)`` says which id an aggregate claims and the uuid that
id has; ``identity_problem`` what is wrong when they differ.

``verified_project`` is the application's projector (``Repository.get``): ``fastpaths.project``
that also recomputes the hash chain of every round and table fact it folds from the store
(from the stream's genesis on a first load, from the cached digest on a fast-forward), and
refuses a fact that does not continue the chain (``StreamIntegrityError``). The application
turns these problems into its ``StreamForged`` error and an alert (logger
``pokdeng.integrity``); docs/audit.md says what is checked where.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from uuid import UUID

from pokdeng_service.store import aggregates as ag
from pokdeng_service.store.codec import chain_digest, wallet_digest
from pokdeng_service.store.facts import payload_of


class StreamIntegrityError(Exception):
    """A stored stream that is not what it claims: another stream's id, or a broken chain."""

    def __init__(self, stream: str, ident: str, uuid: UUID, problem: str) -> None:
        super().__init__(f"{stream} stream {uuid} ({ident!r}): {problem}")
        self.stream = stream
        self.ident = ident
        self.uuid = uuid
        self.problem = problem


def identity(aggregate: Any) -> tuple[str, str, UUID | None] | None:
    """(stream kind, the id the aggregate claims, the uuid of that id), or None for another type.
    (A claimed id that is not text has no uuid: None.)"""
    if isinstance(aggregate, ag.RoundRecord):
        stream, ident, make = "round", getattr(aggregate, "round_id", None), ag.round_uuid
    elif isinstance(aggregate, ag.TableRecord):
        stream, ident, make = "table", getattr(aggregate, "table_id", None), ag.table_uuid
    elif isinstance(aggregate, ag.Wallet):
        stream, ident, make = "wallet", getattr(aggregate, "wallet_id", None), ag.wallet_uuid
    elif isinstance(aggregate, ag.SealedSeed):
        stream, ident, make = "seed", getattr(aggregate, "round_id", None), ag.seed_uuid
    elif isinstance(aggregate, ag.CommandRecord):
        ident, scope = getattr(aggregate, "request_id", None), getattr(aggregate, "scope", "")
        if not isinstance(ident, str) or not isinstance(scope, str):
            return "request", repr(ident), None
        return "request", ident, ag.command_uuid(ident, scope)  # (request ids are scoped to their caller)
    else:
        return None
    if not isinstance(ident, str):
        return stream, repr(ident), None
    return stream, ident, make(ident)


def identity_problem(aggregate: Any) -> str | None:
    """What is wrong with the aggregate's identity (its uuid is not the uuid of the id it claims), or None."""
    claimed = identity(aggregate)
    if claimed is None:
        return None
    stream, ident, expected = claimed
    if expected is None:
        return f"its first event names no {stream} id (it names {ident})"
    if expected != aggregate.id:
        return f"it claims to be {stream} {ident!r}, whose stream is {expected}"
    stream_id = getattr(aggregate, "stream_id", None)
    if isinstance(aggregate, ag.RoundRecord | ag.TableRecord) and stream_id != ident:
        return f"its chain belongs to {stream_id!r}"
    return None


def check_identity(aggregate: Any) -> None:
    """Raise ``StreamIntegrityError`` unless the aggregate's uuid is the uuid of the id it claims."""
    problem = identity_problem(aggregate)
    if problem is not None:
        stream, ident, _expected = identity(aggregate) or ("stream", "", aggregate.id)
        raise StreamIntegrityError(stream, str(ident), aggregate.id, problem)


def fact_problem(aggregate: Any, fact: Any) -> str | None:
    """Whether ``fact`` continues the chain of ``aggregate`` (a round or table at the version before it)."""
    where = f"event {fact.originator_version} ({getattr(fact, 'kind', '?')})"
    stream_id = getattr(fact, "stream_id", None)
    if stream_id != aggregate.stream_id:
        return f"{where} belongs to stream {stream_id!r}"
    try:
        expected = chain_digest(
            aggregate.last_digest,
            fact.kind,
            fact.data,
            fact.originator_version,
            fact.command_id,
            fact.timestamp.isoformat(),
        )
    except (AttributeError, TypeError, ValueError):
        return f"{where} cannot be digested"
    if expected != getattr(fact, "digest", None):
        return f"{where} does not continue the hash chain"
    return None


def wallet_fact_problem(wallet: ag.Wallet, event: Any) -> str | None:
    """Whether a wallet movement continues its wallet's chain (``codec.wallet_digest`` over the movement and
    the state it leaves, docs/audit.md, "The wallet chain"). A movement without a digest (stored before wallets
    were chained) is one only while the chain has not begun: after a chained one it is refused."""
    kind = type(event).__name__
    where = f"event {event.originator_version} ({kind})"
    data = payload_of(event)
    digest = data.pop("digest", "")
    genesis = ag.wallet_genesis(wallet.wallet_id)
    previous = wallet.__dict__.get("last_digest") or genesis
    if not digest:
        return None if previous == genesis else f"{where} carries no digest, after chained ones"
    try:
        balance, reservations = ag.wallet_step(wallet.balance, wallet.reservations, kind, data)
        expected = wallet_digest(
            previous, kind, data, event.originator_version, event.timestamp.isoformat(), balance, reservations
        )
    except (AttributeError, KeyError, TypeError, ValueError):
        return f"{where} cannot be digested"
    return None if expected == digest else f"{where} does not continue the wallet's hash chain"


_CHAINED = (ag.RoundRecord, ag.TableRecord)
_FACT = ag.RoundRecord.Fact  # the chained streams' one fact class (each kind is a subclass)
_MOVEMENTS = tuple(getattr(ag.Wallet, kind) for kind in ag.WALLET_KINDS)


def verified_project(aggregate: Any, domain_events: Iterable[Any]) -> Any:
    """``fastpaths.project``, recomputing the chain of each round or table fact before folding it.

    The stream's identity is checked once its first event (or snapshot) made the aggregate, so
    that the chain starts from the genesis of the id the stream is bound to."""
    checked = aggregate is not None
    for domain_event in domain_events:
        if isinstance(aggregate, _CHAINED):
            if not checked:
                check_identity(aggregate)
                checked = True
            if isinstance(domain_event, _FACT):
                problem = fact_problem(aggregate, domain_event)
                if problem is not None:
                    claimed = identity(aggregate)
                    assert claimed is not None
                    raise StreamIntegrityError(claimed[0], claimed[1], aggregate.id, problem)
        elif isinstance(aggregate, ag.Wallet) and isinstance(domain_event, _MOVEMENTS):
            problem = wallet_fact_problem(aggregate, domain_event)
            if problem is not None:
                raise StreamIntegrityError("wallet", aggregate.wallet_id, aggregate.id, problem)
        aggregate = _folded(aggregate, domain_event)
    if isinstance(aggregate, _CHAINED) and not checked:
        check_identity(aggregate)
    return aggregate


def _folded(aggregate: Any, domain_event: Any) -> Any:
    """The aggregate with one more event, or ``StreamIntegrityError`` naming the stream if the event cannot be
    folded on it (a second creation row, a version out of turn, a payload its class cannot take): a stored
    stream the load cannot fold is not what any writer of this service saved."""
    try:
        return domain_event.mutate(aggregate)
    except StreamIntegrityError:
        raise
    except Exception as error:
        claimed = identity(aggregate)
        stream, ident = (claimed[0], claimed[1]) if claimed is not None else ("stream", "?")
        uuid = getattr(aggregate, "id", None) or domain_event.originator_id
        position = getattr(domain_event, "originator_version", "?")
        why = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        problem = f"its event at position {position} cannot be folded ({why})"
        raise StreamIntegrityError(stream, ident, uuid, problem) from None


def opening_problem(record: ag.RoundRecord, table: ag.TableRecord | None) -> str | None:
    """Whether the round's table opened it: the round is the table's round ``n`` (``<table id>#<n>``,
    as its opening says), the table's ``round_started`` of it exists (``n`` is at most the table's
    round number), and an open round is the table's current one. None if so, else what is wrong."""
    if table is None:
        return f"its table {record.table_id!r} does not exist"
    state = record.state
    if state.round_id != record.round_id or state.table_id != record.table_id:
        return f"its opening names round {state.round_id!r} of table {state.table_id!r}"
    played = table.state.round_no
    if record.round_id != f"{record.table_id}#{state.round_no}" or not 1 <= state.round_no <= played:
        return f"table {record.table_id!r} never opened it (the table has opened {played} rounds)"
    if not state.is_closed and table.state.round_id != record.round_id:
        return f"it is open, but table {record.table_id!r} is playing {table.state.round_id!r}"
    return None
