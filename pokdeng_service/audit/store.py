"""Whole-store verification: every stream of a store read once, each checked alone and against the others.

``verify_store(app)`` is what ``pokdeng verify --all`` runs on each partition. It enumerates the
store from the store itself: the notification log (every stored row of every stream, in the
order recorded), read from its first row to its last, ``PAGE`` rows at a time, each row decoded
once (``fastpaths.facts_of_rows``). Nothing comes from the application's caches, snapshots or
loaders. Every stream is checked as its rows arrive, then the streams against each other:

1. **Rows** (each stream, check ``stream``): positions 1, 2, 3, ... with no gap, duplicate or
   reordering; position 1 and only position 1 is the stream's creation row, of the stream's
   class, naming the id whose uuid the stream has; every row of a stream is of that stream's
   class. A sealed seed's and a command record's stream is exactly its creation row.
2. **Chains** (rounds, tables, wallets, check ``chain``): every row after the creation carries a
   digest, and every digest recomputes from the one before (rounds and tables:
   ``codec.chain_digest``; wallets: ``codec.wallet_digest``, over the wallet's state after the
   event, folded here). Wallet rows stored before wallets were chained carry none: reported as
   *unchained*, a failure (their money is not tamper-evident), never a crash.
3. **Rounds**: each closed round is replayed and its money checked (``replay``: commitment,
   replay, money), nothing follows its ``round_closed``; an open round must be its table's
   current round (else its stream is *incomplete*: a deleted tail).
4. **Tables** (check ``rounds``): every ``round_started`` has its round's stream; every
   ``round_finished`` pins its round's last digest and books its outcome, house_net and
   commission as the round's own settlement does; every round stream was started by its table;
   **house ledger**: the table's folded house_net and commission equal the sums of its rounds'.
5. **Wallets** (checks ``rounds`` and ``balance``): per round, what the wallet reserved,
   released and was paid equals what the round's bets, settlement or void say; its balance (the
   fold) equals deposits - withdrawals + the nets of the rounds it played (from the rounds'
   streams), and no more is reserved than the wallet holds, and only for open rounds.
6. **Snapshots** (wallets and tables, check ``snapshots``): every stored snapshot equals the fold
   of the events it summarises (balance and reservations, or the table's state) and carries the
   chain digest of the event it ends at.
7. **Sealed seeds and command records** (one verdict each): a round has exactly one sealed
   seed; with this process's vault key, each opens to its round's commitment; a command
   record's result names the positions its request wrote, each carrying its request id.

Each failure names its stream and the first bad position in it. Streams of other aggregates
(the round log, ...) are counted, and left to their own verification.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol
from uuid import UUID

from eventsourcing.persistence import Mapper

from pokdeng_core import events as re
from pokdeng_core import table_events as te
from pokdeng_core import table_state as ts
from pokdeng_core.currencies import currency_of
from pokdeng_service.audit.outbox import STREAM as PLATFORM_STREAM
from pokdeng_service.audit.outbox import PlatformAudit
from pokdeng_service.audit.replay import check_money, check_replay
from pokdeng_service.audit.store_streams import (
    IDENTITY,
    TARGETS,
    RoundRead,
    SnapshotPages,
    StreamRead,
    TableRead,
    WalletRead,
    classify,
)
from pokdeng_service.audit.store_verdicts import StoreVerdicts
from pokdeng_service.audit.verdicts import Verdict
from pokdeng_service.store import aggregates as ag
from pokdeng_service.store import fastpaths
from pokdeng_service.store.codec import chain_digest, from_data, genesis_digest, wallet_digest
from pokdeng_service.store.facts import RecordedEvent

PAGE = 1000
"""Rows of the notification log read at a time."""
"""Snapshots of one stream read at a time."""


class StoreRecord(Protocol):
    """What the verification reads of an application: its stored rows, their mapper, its snapshots
    (``PokdengApp`` is one). ``vault`` (optional) opens sealed seeds sealed under its key."""

    @property
    def recorder(self) -> Any:
        """An ``ApplicationRecorder``: ``select_notifications`` pages through every stored row."""
        ...

    @property
    def mapper(self) -> Mapper[UUID]: ...


def verify_store(
    app: StoreRecord,
    page: int = PAGE,
    *,
    partition: int = 0,
    partitions: int = 1,
    progress: Callable[[int], None] | None = None,
) -> list[Verdict]:
    """Every stream of the store behind ``app`` verified, alone and against the others: one verdict per
    round, table and wallet, one for the sealed seeds, one for the command records and one for the
    store as a whole (its log, its digests, its layout: every stream in the partition its key names, for a
    store that is partition ``partition`` of ``partitions``; streams not verified here). Failures name the
    stream and its first bad position. ``progress`` is told the log's position read so far after each page
    (the CLI's progress bar)."""
    audit = _StoreAudit(app)
    audit.partition, audit.partitions = partition, partitions
    audit.read(page, progress)
    return audit.verdicts()


class _StoreAudit(StoreVerdicts):
    def __init__(self, app: StoreRecord) -> None:
        self.app = app
        self.vault = getattr(app, "vault", None)
        self.snapshot_store = getattr(app, "snapshots", None)
        self.streams: dict[UUID, StreamRead] = {}
        self.rounds: dict[str, RoundRead] = {}
        self.tables: dict[str, TableRead] = {}
        self.wallets: dict[str, WalletRead] = {}
        self.seeds: dict[str, tuple[StreamRead, RecordedEvent]] = {}
        self.request_problems: list[str] = []
        self.requests = 0
        self.others: dict[str, int] = {}
        self.unknown: list[str] = []
        self.topics: dict[str, tuple[str, bool] | None] = {}
        self.rows = 0
        self.runs: dict[UUID, tuple[str, int]] = {}  # a chained stream's latest run: (command id, first position)
        self.platform = PlatformAudit()  # the rounds' transactions with a platform's wallet (docs/wallet.md)

    # -- reading -----------------------------------------------------------------------

    def read(self, page: int, progress: Callable[[int], None] | None = None) -> None:
        recorder, mapper = self.app.recorder, self.app.mapper
        start = 1
        while True:
            notes = recorder.select_notifications(start=start, limit=page)
            if not notes:
                break
            for note, fact in zip(notes, self._decode(mapper, notes), strict=True):
                self.rows += 1
                self._row(note, fact)
            if progress is not None:
                progress(notes[-1].id)
            if len(notes) < page:
                break
            start = notes[-1].id + 1

    @staticmethod
    def _decode(mapper: Mapper[UUID], notes: Sequence[Any]) -> list[RecordedEvent | Exception]:
        try:
            return list(fastpaths.facts_of_rows(mapper, notes))
        except Exception:  # one row the library cannot decode: the others still are
            out: list[RecordedEvent | Exception] = []
            for note in notes:
                try:
                    out.append(fastpaths.fact_of_row(mapper, note))
                except Exception as error:
                    out.append(error)
            return out

    def _row(self, note: Any, fact: RecordedEvent | Exception) -> None:
        uuid, position = note.originator_id, note.originator_version
        kind = classify(note.topic, self.topics)
        if kind is None:
            self.unknown.append(f"log position {note.id}: stream {uuid} position {position} has topic {note.topic!r}")
            return
        stream_kind, creation = kind
        stream = self.streams.get(uuid)
        if stream is None:
            stream = self._open(uuid, stream_kind)
        stream.rows += 1
        if position != stream.expected:
            gap = "missing" if position > stream.expected else "out of order or repeated"
            stream.fail("stream", stream.expected, f"position {position} follows {stream.expected - 1} ({gap})")
        stream.expected = position + 1
        if isinstance(fact, Exception):
            stream.fail("stream", position, f"the row cannot be decoded: {fact}")
            return
        stream.last = fact
        if stream_kind != stream.kind:
            stream.fail("stream", position, f"a {stream_kind} row in a {stream.kind} stream", fact.kind)
            return
        if stream.kind == PLATFORM_STREAM:  # a round's transactions with the platform's wallet (audit.outbox)
            self.platform.row(self, stream, fact)
            return
        if stream.kind not in IDENTITY:  # another aggregate's stream: counted only
            self.others[stream.kind] = self.others.get(stream.kind, 0) + 1
            return
        if creation:
            if position != 1:
                if stream.kind in ("round", "table", "wallet"):
                    stream.fail("stream", position, "a second creation row (it carries no digest)", fact.kind)
                    stream.fail("chain", position, "carries no digest", fact.kind)
                    stream.undigested = stream.undigested or position
                else:
                    stream.fail("stream", position, "a second creation row (the stream is its one row)", fact.kind)
                return
            self._created(stream, fact)
            return
        if position == 1:
            stream.fail("stream", 1, "where the stream's creation row belongs", fact.kind)
        if isinstance(stream, RoundRead):
            self._round_fact(stream, fact)
        elif isinstance(stream, TableRead):
            self._table_fact(stream, fact)
        elif isinstance(stream, WalletRead):
            self._wallet_fact(stream, fact)

    def _open(self, uuid: UUID, kind: str) -> StreamRead:
        stream: StreamRead
        if kind == "round":
            stream = RoundRead(uuid, kind)
        elif kind == "table":
            stream = TableRead(uuid, kind)
        elif kind == "wallet":
            stream = WalletRead(uuid, kind)
        else:
            stream = StreamRead(uuid, kind)
        self.streams[uuid] = stream
        return stream

    def _created(self, stream: StreamRead, fact: RecordedEvent) -> None:
        key, uuid_of = IDENTITY[stream.kind]
        ident = fact.data.get(key)
        if type(ident) is not str or uuid_of(ident, fact.data) != stream.uuid:
            # not the stream of the id it names: verified on its own, as "<kind> stream <uuid>"
            stream.fail("stream", 1, f"its creation names {stream.kind} {ident!r}, whose stream is not {stream.uuid}")
            return
        stream.ident = ident
        if isinstance(stream, RoundRead):
            stream.previous = genesis_digest(ident)
            stream.table_id = str(fact.data.get("table_id", ""))
            stream.facts.append(fact)
            self.rounds.setdefault(ident, stream)
        elif isinstance(stream, TableRead):
            stream.previous = genesis_digest(f"table:{ident}")
            stream.snapshots = self._snapshots(stream.uuid)
            self.tables.setdefault(ident, stream)
            self._table_snapshots(stream, 1)
        elif isinstance(stream, WalletRead):
            stream.previous = ag.wallet_genesis(ident)
            stream.currency = currency_of(fact.data)
            stream.snapshots = self._snapshots(stream.uuid)
            self.wallets.setdefault(ident, stream)
            self._wallet_snapshots(stream, 1)
        elif stream.kind == "seed":
            self.seeds.setdefault(ident, (stream, fact))
        elif stream.kind == "request":
            self.requests += 1
            self._request(stream, fact)

    def _snapshots(self, uuid: UUID) -> SnapshotPages | None:
        store = self.snapshot_store
        if store is None or getattr(store, "recorder", None) is None:
            return None
        return SnapshotPages(uuid, store)

    # -- chained streams -----------------------------------------------------------------

    def _chain(self, stream: StreamRead, fact: RecordedEvent) -> None:
        """A round's or table's fact continues its chain (``codec.chain_digest``)."""
        if stream.chain_broken:
            return
        if not fact.digest:
            stream.chain_broken = True
            stream.undigested = stream.undigested or fact.position
            stream.fail("chain", fact.position, "carries no digest", fact.kind)
            return
        try:
            digest = chain_digest(stream.previous, fact.kind, fact.data, fact.position, fact.command_id, fact.timestamp)
        except (TypeError, ValueError):
            digest = ""
        if digest != fact.digest:
            stream.chain_broken = True
            stream.fail("chain", fact.position, "does not match its digest", fact.kind)
            return
        stream.previous = digest
        run = self.runs.get(stream.uuid)
        if run is None or run[0] != fact.command_id:
            self.runs[stream.uuid] = (fact.command_id, fact.position)

    def _round_fact(self, record: RoundRead, fact: RecordedEvent) -> None:
        if fact.kind not in re.EVENT_BY_KIND:
            record.fail("stream", fact.position, "is not a round event", fact.kind)
        self._chain(record, fact)
        if record.closed is not None:
            record.fail("complete", fact.position, "follows the round's round_closed", fact.kind)
            return
        record.facts.append(fact)
        if fact.kind == re.RoundClosed.kind:
            record.closed = fact
            self._close_round(record)

    def _table_fact(self, table: TableRead, fact: RecordedEvent) -> None:
        self._chain(table, fact)
        cls = te.TABLE_EVENT_BY_KIND.get(fact.kind)
        if cls is None:
            table.fail("stream", fact.position, "is not a table event", fact.kind)
            return
        try:
            table.state = ts.evolve_table(table.state, from_data(cls, fact.data))
        except Exception as error:
            table.fail("stream", fact.position, f"cannot be folded: {error}", fact.kind)
            return
        if fact.kind == te.RoundStarted.kind:
            table.started.append((str(fact.data.get("round_id")), fact.position))
        elif fact.kind == te.RoundFinished.kind:
            table.finished.append((str(fact.data.get("round_id")), fact.position, fact.data))
        self._table_snapshots(table, fact.position)

    def _wallet_fact(self, wallet: WalletRead, fact: RecordedEvent) -> None:
        kind, data, position = fact.kind, fact.data, fact.position
        if kind not in ag.WALLET_KINDS:
            wallet.fail("stream", position, "is not a wallet event", fact.kind)
            return
        try:
            balance, reservations = ag.wallet_step(wallet.balance, wallet.reservations, kind, data)
        except (KeyError, TypeError, ValueError) as error:
            wallet.fail("stream", position, f"cannot be applied: {error!r}", fact.kind)
            return
        if not fact.digest:
            _wallet_undigested(wallet, fact)
        elif not wallet.chain_broken:
            _wallet_chained(wallet, fact, balance, reservations)
        wallet.balance, wallet.reservations = balance, reservations
        round_id = data.get("round_id")
        if kind == "Deposited":
            wallet.deposits += data["amount"]
        elif kind == "Withdrawn":
            wallet.withdrawals += data["amount"]
        elif isinstance(round_id, str):
            _wallet_round(wallet, fact, round_id)
        self._wallet_snapshots(wallet, position)

    # -- snapshots -----------------------------------------------------------------------

    def _wallet_snapshots(self, wallet: WalletRead, position: int) -> None:
        if wallet.snapshots is None:
            return
        for snapshot in wallet.snapshots.due(position):
            version, state = snapshot.originator_version, snapshot.state
            where = f"the snapshot at version {version}"
            if version != position or not isinstance(state, dict):
                wallet.fail("snapshots", version, f"{where} summarises no event of the stream")
                continue
            if state.get("wallet_id") != wallet.ident:
                wallet.fail("snapshots", version, f"{where} names wallet {state.get('wallet_id')!r}")
            elif state.get("balance") != wallet.balance or state.get("reservations") != wallet.reservations:
                wallet.fail(
                    "snapshots",
                    version,
                    f"{where} holds balance {state.get('balance')!r} and reservations "
                    f"{state.get('reservations')!r}; the events give {wallet.balance} and {wallet.reservations}",
                )
            elif "last_digest" in state and state["last_digest"] != wallet.previous and not wallet.chain_broken:
                wallet.fail("snapshots", version, f"{where} carries another chain digest than event {version}'s")

    def _table_snapshots(self, table: TableRead, position: int) -> None:
        if table.snapshots is None:
            return
        for snapshot in table.snapshots.due(position):
            version, state = snapshot.originator_version, snapshot.state
            where = f"the snapshot at version {version}"
            if version != position or not isinstance(state, dict):
                table.fail("snapshots", version, f"{where} summarises no event of the stream")
                continue
            if state.get("table_id") != table.ident or state.get("stream_id") != table.ident:
                table.fail("snapshots", version, f"{where} names table {state.get('table_id')!r}")
            elif state.get("state") != table.state:
                table.fail("snapshots", version, f"{where} is not the fold of events 1 to {version}")
            elif state.get("last_digest") != table.previous and not table.chain_broken:
                table.fail("snapshots", version, f"{where} carries another chain digest than event {version}'s")

    # -- rounds --------------------------------------------------------------------------

    def _close_round(self, record: RoundRead) -> None:
        """A closed round: replayed and its money checked now; its facts are let go."""
        replay = Verdict("")
        check_replay(replay, record.facts)
        nets = check_money(replay, record.facts)
        record.replayed = replay.checks
        self._summarise(record)
        record.nets = nets or record.nets
        record.facts = []

    # -- command records -----------------------------------------------------------------

    def _request(self, stream: StreamRead, fact: RecordedEvent) -> None:
        """A request's result names the positions it wrote: its stream's last ones when it was saved
        (a request's record is saved last in its transaction), caused by it."""
        result = fact.data.get("result")
        name = f"request {stream.ident!r}"
        if not isinstance(result, dict):
            self.request_problems.append(f"{name} position 1: its result is not a stream's range")
            return
        uuid_of = TARGETS.get(result.get("stream", ""))
        first, last = result.get("from"), result.get("to")
        if uuid_of is None:
            return  # a stream of another kind: not checked here
        if type(first) is not int or type(last) is not int or not isinstance(result.get("id"), str):
            self.request_problems.append(f"{name} position 1: its result is not a stream's range")
            return
        target = self.streams.get(uuid_of(result["id"]))
        where = f"{result['stream']} {result['id']} positions {first} to {last}"
        if target is None or target.last is None:
            self.request_problems.append(f"{name} position 1: its result names {where}, which the store lacks")
            return
        if not 1 <= first <= last + 1 or last != target.last.position:
            self.request_problems.append(
                f"{name} position 1: its result names {where}; {target.label} ended at {target.last.position}"
            )
            return
        if first > last or target.kind == "wallet":
            made_by = target.last.data.get("request_id", stream.ident)
            if target.kind == "wallet" and target.last.kind in ("Deposited", "Withdrawn") and made_by != stream.ident:
                self.request_problems.append(
                    f"{name} position 1: {target.label} position {last} ({target.last.kind}) "
                    f"was made by request {made_by!r}"
                )
            return
        run = self.runs.get(target.uuid)
        if last < 2 or target.chain_broken:
            return  # the creation row alone, or a broken chain (reported on its stream)
        # The facts up to ``last`` carry the request's id since ``max(first, 2)`` at the latest (one
        # request id of two callers, scoped apart, may run on in one stream: hence not "exactly"). A
        # command whose stream's last event before it was another sender's with the same id carries the
        # id with its sender's scope (``attempt.Attempt.command_id``, docs/events.md ``command_id``).
        scope = fact.data.get("scope")
        ids = ag.command_ids(stream.ident, scope) if isinstance(scope, str) and scope else (stream.ident,)
        if run is None or run[0] not in ids or run[1] > max(first, 2):
            run = run or ("", 0)
            self.request_problems.append(
                f"{name} position 1: {where} were not all caused by it (from position {run[1]}: request {run[0]!r})"
            )


# --- a wallet's fact, step by step (``_StoreAudit._wallet_fact``) -------------------------------------------


def _wallet_undigested(wallet: WalletRead, fact: RecordedEvent) -> None:
    """A fact without a digest: counted among the unchained (first, last, how many); after chained facts it
    breaks the chain."""
    position = fact.position
    wallet.undigested = wallet.undigested or position
    if wallet.unchained:
        wallet.unchained[1:] = [position, wallet.unchained[2] + 1]
    else:
        wallet.unchained = [position, position, 1]
    if wallet.chained and not wallet.chain_broken:
        wallet.chain_broken = True
        wallet.fail("chain", position, "carries no digest, after chained events", fact.kind)


def _wallet_chained(wallet: WalletRead, fact: RecordedEvent, balance: int, reservations: dict[str, int]) -> None:
    """A fact with a digest, on an unbroken chain: its digest the one of the wallet after it, or the chain broken."""
    wallet.chained = True
    try:
        digest = wallet_digest(
            wallet.previous, fact.kind, fact.data, fact.position, fact.timestamp, balance, reservations
        )
    except (TypeError, ValueError):
        digest = ""
    if digest != fact.digest:
        wallet.chain_broken = True
        wallet.fail("chain", fact.position, "does not match its digest", fact.kind)
    else:
        wallet.previous = digest


def _wallet_round(wallet: WalletRead, fact: RecordedEvent, round_id: str) -> None:
    """A fact of one of the wallet's rounds: its reservations summed, its close (released, net, position, how many
    closes) noted; a reservation after the close, or a second close, fails."""
    kind, data, position = fact.kind, fact.data, fact.position
    entry = wallet.rounds.get(round_id)
    if entry is None:
        entry = wallet.rounds[round_id] = [0, position, "", 0, 0, 0, 0]
    if kind == "FundsReserved":
        entry[0] += data["amount"]
        if entry[6]:
            wallet.fail("rounds", position, f"reserves for round {round_id} after it closed", fact.kind)
    else:
        entry[2:7] = [
            kind,
            data.get("released", data.get("amount")),
            data.get("net", 0),
            position,
            entry[6] + 1,
        ]
        if entry[6] > 1:
            wallet.fail("rounds", position, f"closes round {round_id} a second time", fact.kind)
