"""Live verification: a round checked against a store, through an application's public reading methods.

``verify_round`` reads a round's stream afresh, checks its chain, replays it (``replay``),
checks its money, and looks for the table's pin of its last digest (``table_pins``) and,
if asked, each wallet's record of its settlement. ``AuditedRecord`` lists everything the
audit reads of an application (``PokdengApp`` is one).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, Protocol, cast
from uuid import UUID

from eventsourcing.application import Repository
from eventsourcing.persistence import AggregateRecorder, EventStore, Mapper

from pokdeng_core import events as re
from pokdeng_core.currencies import currency_of
from pokdeng_core.limits import check_id, id_problem
from pokdeng_core.round_state import RoundState
from pokdeng_service.application.errors import NotFound, StreamForged, stream_forged
from pokdeng_service.application.views import RecordedEvent
from pokdeng_service.audit.outbox import verify_platform_round
from pokdeng_service.audit.replay import check_chain, check_money, check_replay, core_facts, replay_events
from pokdeng_service.audit.table_pins import TablePins, table_finish
from pokdeng_service.audit.verdicts import Verdict
from pokdeng_service.money import format_money
from pokdeng_service.store.aggregates import RoundRecord, Wallet, round_uuid, wallet_uuid
from pokdeng_service.store.facts import Fact, fact_of
from pokdeng_service.store.fastpaths import stream_facts

WALLET_ROUND_SETTLED = Wallet.RoundSettled.__name__
"""The class name of a wallet's record of a round's settlement."""

_WALLET_PAGE = 200
ROUNDS_PER_READ = 50
"""Rounds whose streams ``verify_rounds`` reads at a time (``fastpaths.stream_facts``), ahead of verifying them."""
_ROUND_STARTED = RoundRecord.Started.__name__  # the kind of a round stream's first event


class AuditedRecord(Protocol):
    """What the audit reads of an application: the library's stores and the app's public reads."""

    @property
    def recorder(self) -> AggregateRecorder:
        """Stored rows, read afresh (``round_facts``, table pins)."""
        ...

    @property
    def mapper(self) -> Mapper[UUID]:
        """Decodes stored rows (``round_facts``, table pins)."""
        ...

    @property
    def events(self) -> EventStore[UUID]:
        """Domain events: a wallet's, newest first (``wallet_settlement``); a round's without a recorder."""
        ...

    @property
    def repository(self) -> Repository[UUID]:
        """A wallet at a version, for its balance (``wallet_settlement``)."""
        ...

    @property
    def audit_hints(self) -> dict[str, int]:
        """Per table, where its pins were last found (table pins read and update it)."""
        ...

    def server_seed(self, round_id: str) -> bytes:
        """The seed of a round, also of an open one (``verify_round`` of an open round)."""
        ...

    def stream_events(self, uuid: UUID, gt: int | None = None, lte: int | None = None) -> tuple[RecordedEvent, ...]:
        """A stream's stored events (table pins' search of a whole table stream)."""
        ...

    def round_state(self, round_id: str) -> RoundState:
        """A round's public state (``export_bundle``)."""
        ...

    def round_events(self, round_id: str) -> tuple[RecordedEvent, ...]:
        """A round's stored events (``export_bundle``)."""
        ...

    def inclusion_proof(self, round_id: str) -> dict[str, Any] | None:
        """A closed round's proof of inclusion in its table's checkpoint (``export_bundle``)."""
        ...


def verify_rounds(app: AuditedRecord, round_ids: Iterable[str], check_wallets: bool = False) -> Iterator[Verdict]:
    """``verify_round`` for each round in turn, sharing one ``TablePins`` over the batch: each
    table's stream is read forward a page at a time for the pins of the rounds being verified,
    instead of once per round; and the rounds' own streams are read ``ROUNDS_PER_READ`` at a
    time, just ahead of their verification (each round is then checked from those rows exactly
    as ``verify_round`` checks the rows it reads)."""
    pins = TablePins(app)
    pending = iter(round_ids)
    while batch := list(islice(pending, ROUNDS_PER_READ)):
        read = _read_rounds(app, batch)
        for round_id in batch:
            yield _verdict(app, round_id, check_wallets, pins, read.get(round_id) if read else None)


def _read_rounds(app: AuditedRecord, round_ids: Sequence[str]) -> dict[str, list[Fact]] | None:
    """The stored rows of each round named by a valid id, read afresh (``fastpaths.stream_facts``),
    or None if ``app`` has no recorder to read (an invalid id is left to its own verification)."""
    recorder, mapper = getattr(app, "recorder", None), getattr(app, "mapper", None)
    if recorder is None or mapper is None:
        return None
    uuids = {r: round_uuid(r) for r in round_ids if isinstance(r, str) and id_problem(r, "round_id") is None}
    facts = stream_facts(recorder, mapper, uuids.values())
    return {round_id: facts[uuid] for round_id, uuid in uuids.items()}


def verify_round(
    app: AuditedRecord, round_id: str, check_wallets: bool = False, pins: TablePins | None = None
) -> Verdict:
    """Chain, replay, money, and the round as the table (and, if asked, the wallets) recorded it.

    Everything comes from the round's stream, read once: the chain covers every position
    (a gap, an insertion or a reordering breaks it), and the replay rebuilds the state.
    The table's pin of the round's last digest is read afresh too, unless ``pins`` (one
    batch's reader, see ``verify_rounds``) read it ahead earlier in the batch.

    A stream read on the way that is not what it claims (the round's, its table's, a
    wallet's: ``StreamForged``, its alert logged) fails the verdict's ``stream`` check.
    """
    return _verdict(app, round_id, check_wallets, pins, None)


def replay_round(app: AuditedRecord, round_id: str) -> tuple[Verdict, list[re.RoundEvent]]:
    """A round replayed from its seed and recorded decisions: (the replay's verdict, the replayed core events;
    none unless the verdict passes)."""
    events = app.round_events(round_id)
    verdict = Verdict(f"replay of round {round_id}")
    check_replay(verdict, events)
    replayed = replay_events(events)[0] if verdict.ok else []
    return verdict, replayed


def _verdict(
    app: AuditedRecord, round_id: str, check_wallets: bool, pins: TablePins | None, events: list[Fact] | None
) -> Verdict:
    """``verify_round``, of the round's rows ``events`` if they were read already (else read here)."""
    verdict = Verdict(f"round {round_id}")
    try:
        _verify_round(verdict, app, round_id, check_wallets, pins, events)
    except StreamForged as error:
        verdict.add("stream", False, error.message)
    return verdict


def _verify_round(
    verdict: Verdict,
    app: AuditedRecord,
    round_id: str,
    check_wallets: bool,
    pins: TablePins | None,
    events: list[Fact] | None,
) -> None:
    events = round_facts(app, round_id, events)
    last = check_chain(verdict, round_id, events)
    facts = core_facts(events)
    opened = next((e for e in facts if e.kind == re.RoundOpened.kind), None)
    if opened is None:
        verdict.add("record", False, f"the round's stream has no {re.RoundOpened.kind} event")
        return
    closed = any(e.kind == re.RoundClosed.kind for e in facts)
    seed = None
    if not closed:  # an operator-side check of an open round: the seed is still sealed
        seed = app.server_seed(round_id)
    check_replay(verdict, events, seed)
    if not closed:  # nothing is settled in an open round yet: that is no fault of its record
        verdict.add("money", True, "the round is open: nothing is settled yet")
        return
    nets = check_money(verdict, events)
    table_id = opened.data["table_id"]
    if pins is None:
        finished = table_finish(app, table_id, round_id, opened.data["round_no"])
    else:
        finished = pins.find(table_id, round_id, opened.data["round_no"])
    pinned = finished is not None and finished.data.get("round_digest") == last
    verdict.add("table record", pinned, f"table {table_id} pins the round's last digest")
    if check_wallets:
        if not nets:  # (a void: no net, but its rollbacks may be a platform's: docs/wallet.md)
            verify_platform_round(app, verdict, round_id, facts)
        currency = currency_of(opened.data)
        for player, net in nets.items():
            applied = wallet_settlement(app, player, round_id)
            if applied is None and verify_platform_round(app, verdict, round_id, facts):
                break  # the round's money is a platform's: its transactions are checked (docs/wallet.md)
            said = format_money(applied[0], currency, signed=True) if applied else "nothing"
            verdict.add(
                f"wallet {player}",
                applied is not None and applied[0] == net,
                f"wallet applied {said}, round says {format_money(net, currency, signed=True)}",
            )


def round_facts(app: AuditedRecord, round_id: str, read: list[Fact] | None = None) -> list[Fact]:
    """The round's stored events, read afresh from the store (a cached copy would hide an edit of the
    rows), or ``read``: its rows as ``verify_rounds`` read them just before; checked alike."""
    check_id(round_id, "round_id")
    recorder, mapper = getattr(app, "recorder", None), getattr(app, "mapper", None)
    if read is not None:
        facts = read
    elif recorder is not None and mapper is not None:
        uuid = round_uuid(round_id)
        facts = stream_facts(recorder, mapper, (uuid,))[uuid]
    else:
        facts = [fact_of(item) for item in app.events.get(round_uuid(round_id))]
    if not facts:
        raise NotFound(f"round {round_id!r} not found", round=round_id)
    first = facts[0]
    claimed = first.data.get("round_id") if first.kind == _ROUND_STARTED else None
    if first.position != 1 or claimed != round_id:
        problem = f"its first event is {first.kind} at {first.position}, naming round {claimed!r}"
        raise stream_forged("round", round_id, round_uuid(round_id), problem)
    return facts


def wallet_settlement(app: AuditedRecord, wallet_id: str, round_id: str) -> tuple[int, int] | None:
    """(net, balance after) of a round as the wallet applied it, or None.

    The wallet's stream is read newest first, a page at a time, so that checking a recent
    round costs the same however long the wallet's history; the balance comes from the
    wallet loaded at that version (snapshots make that flat too).
    """
    uuid = wallet_uuid(wallet_id)
    lte: int | None = None
    while True:
        items: list[Any] = list(app.events.get(uuid, desc=True, lte=lte, limit=_WALLET_PAGE))
        for item in items:
            if type(item).__name__ == WALLET_ROUND_SETTLED and item.round_id == round_id:
                wallet = cast(Wallet, app.repository.get(uuid, version=item.originator_version))
                if getattr(wallet, "wallet_id", None) != wallet_id:
                    problem = f"it claims to be wallet {getattr(wallet, 'wallet_id', None)!r}"
                    raise stream_forged("wallet", wallet_id, uuid, problem)
                return int(item.net), int(wallet.balance)
        if len(items) < _WALLET_PAGE:
            return None
        lte = items[-1].originator_version - 1
