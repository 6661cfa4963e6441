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

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from uuid import UUID

from eventsourcing.persistence import Mapper
from eventsourcing.utils import resolve_topic

from pokdeng_core import events as re
from pokdeng_core import table as tc
from pokdeng_core.shuffle import commitment
from pokdeng_service.audit.replay import check_money, check_replay
from pokdeng_service.audit.verdicts import Verdict
from pokdeng_service.store import aggregates as ag
from pokdeng_service.store import fastpaths
from pokdeng_service.store.codec import chain_digest, from_data, genesis_digest, wallet_digest
from pokdeng_service.store.facts import RecordedEvent

PAGE = 1000
"""Rows of the notification log read at a time."""
SNAPSHOT_PAGE = 100
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


def verify_store(app: StoreRecord, page: int = PAGE) -> list[Verdict]:
    """Every stream of the store behind ``app`` verified, alone and against the others: one verdict per
    round, table and wallet, one for the sealed seeds, one for the command records and one for the
    store as a whole (its log, its digests, streams not verified here). Failures name the stream and
    its first bad position."""
    audit = _StoreAudit(app)
    audit.read(page)
    return audit.verdicts()


# ---------------------------------------------------------------------------------------
# streams as they are read


@dataclass(eq=False)
class _Stream:
    """One stream, as far as it has been read: where it is, and its first problems by check."""

    uuid: UUID
    kind: str  # round, table, wallet, seed, request, or the class of another aggregate
    ident: str = ""  # the id its creation row names
    expected: int = 1  # the next position
    last: RecordedEvent | None = None
    rows: int = 0
    previous: str = ""  # the chain's last digest
    chain_broken: bool = False
    undigested: int = 0  # the first position after the creation without a digest
    problems: dict[str, str] = field(default_factory=dict)  # check -> "position N (kind): what"
    positions: dict[str, int] = field(default_factory=dict)  # check -> N

    def fail(self, check: str, position: int, what: str, kind: str = "") -> None:
        """Record the check's first problem: ``position N (kind): what``."""
        if check not in self.problems:
            where = f"position {position} ({kind})" if kind else f"position {position}"
            self.problems[check] = f"{where}: {what}"
            self.positions[check] = position

    @property
    def label(self) -> str:
        return f"{self.kind} {self.ident}" if self.ident else f"{self.kind} stream {self.uuid}"


@dataclass(eq=False)
class _Round(_Stream):
    table_id: str = ""
    facts: list[RecordedEvent] = field(default_factory=list)
    closed: RecordedEvent | None = None
    replayed: list[Any] = field(default_factory=list)  # the replay's and money's checks, made at the close
    verdict: Verdict | None = None
    # what the round says, for the other streams (filled when it closes, or at the end)
    round_no: int = 0
    banker: str | None = None
    outcome: str = ""
    house_net: int = 0
    commission: int = 0
    nets: dict[str, int] = field(default_factory=dict)
    reserved: dict[str, int] = field(default_factory=dict)
    commitment: str = ""
    last_digest: str = ""


@dataclass(eq=False)
class _Table(_Stream):
    state: tc.TableState = field(default_factory=tc.TableState)
    started: list[tuple[str, int]] = field(default_factory=list)  # (round id, position)
    finished: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)  # (round id, position, data)
    snapshots: _Snapshots | None = None
    ledger: str = ""


@dataclass(eq=False)
class _Wallet(_Stream):
    balance: int = 0
    reservations: dict[str, int] = field(default_factory=dict)
    deposits: int = 0
    withdrawals: int = 0
    unchained: list[int] = field(default_factory=list)  # [first, last, count] of rows without a digest
    chained: bool = False
    # per round: [reserved, first reserve position, closing kind, released, net, closing position, closings]
    rounds: dict[str, list[Any]] = field(default_factory=dict)
    snapshots: _Snapshots | None = None


@dataclass(eq=False)
class _Snapshots:
    """A stream's stored snapshots, read a page at a time as the stream's fold reaches them."""

    uuid: UUID
    store: Any
    queue: list[Any] = field(default_factory=list)
    read_to: int = 0
    done: bool = False
    checked: int = 0

    def next_version(self) -> int | None:
        if not self.queue and not self.done:
            rows = self.store.recorder.select_events(self.uuid, gt=self.read_to or None, limit=SNAPSHOT_PAGE)
            self.queue = [self.store.mapper.to_domain_event(row) for row in rows]
            if rows:
                self.read_to = rows[-1].originator_version
            self.done = len(rows) < SNAPSHOT_PAGE
        return self.queue[0].originator_version if self.queue else None

    def due(self, position: int) -> Iterator[Any]:
        """The snapshots at ``position`` (taken after the stream's event there)."""
        while True:
            version = self.next_version()
            if version is None or version > position:
                return
            snapshot = self.queue.pop(0)
            self.checked += 1
            yield snapshot


# Stored classes of the streams verified here, by topic.
_ROUND_FACT_CLASSES = frozenset(ag.ROUND_FACTS.values())
_TABLE_FACT_CLASSES = frozenset(ag.TABLE_FACTS.values())
_WALLET_CLASSES = {getattr(ag.Wallet, kind): kind for kind in ag.WALLET_KINDS}
_CREATIONS: dict[Any, str] = {
    ag.RoundRecord.Started: "round",
    ag.TableRecord.Opened: "table",
    ag.Wallet.Opened: "wallet",
    ag.SealedSeed.Sealed: "seed",
    ag.CommandRecord.Accepted: "request",
}
_IDENTITY: dict[str, tuple[str, Callable[[str, dict[str, Any]], UUID]]] = {
    "round": ("round_id", lambda ident, _data: ag.round_uuid(ident)),
    "table": ("table_id", lambda ident, _data: ag.table_uuid(ident)),
    "wallet": ("wallet_id", lambda ident, _data: ag.wallet_uuid(ident)),
    "seed": ("round_id", lambda ident, _data: ag.seed_uuid(ident)),
    # (request ids are scoped to the caller that sent them; records before scopes have none)
    "request": ("request_id", lambda ident, data: ag.command_uuid(ident, str(data.get("scope") or ""))),
}
"""Per stream kind: the creation's field naming the stream's id, and the uuid that id has."""
_TARGETS = {"round": ag.round_uuid, "table": ag.table_uuid, "wallet": ag.wallet_uuid}


def _classify(topic: str, cache: dict[str, tuple[str, bool] | None]) -> tuple[str, bool] | None:
    """(stream kind, whether it is a creation row) of a stored topic, or None if no class has it."""
    if topic in cache:
        return cache[topic]
    try:
        cls = resolve_topic(topic)
    except Exception:
        cache[topic] = None
        return None
    found: tuple[str, bool]
    if cls in _CREATIONS:
        found = (_CREATIONS[cls], True)
    elif cls in _ROUND_FACT_CLASSES:
        found = ("round", False)
    elif cls in _TABLE_FACT_CLASSES:
        found = ("table", False)
    elif cls in _WALLET_CLASSES:
        found = ("wallet", False)
    else:
        found = (getattr(cls, "__qualname__", str(cls)).split(".")[0], False)
    cache[topic] = found
    return found


def _where(fact: RecordedEvent) -> str:
    return f"({fact.kind})"


# ---------------------------------------------------------------------------------------
# the pass over the store


class _StoreAudit:
    def __init__(self, app: StoreRecord) -> None:
        self.app = app
        self.vault = getattr(app, "vault", None)
        self.snapshot_store = getattr(app, "snapshots", None)
        self.streams: dict[UUID, _Stream] = {}
        self.rounds: dict[str, _Round] = {}
        self.tables: dict[str, _Table] = {}
        self.wallets: dict[str, _Wallet] = {}
        self.seeds: dict[str, tuple[_Stream, RecordedEvent]] = {}
        self.request_problems: list[str] = []
        self.requests = 0
        self.others: dict[str, int] = {}
        self.unknown: list[str] = []
        self.topics: dict[str, tuple[str, bool] | None] = {}
        self.rows = 0
        self.runs: dict[UUID, tuple[str, int]] = {}  # a chained stream's latest run: (command id, first position)

    # -- reading -----------------------------------------------------------------------

    def read(self, page: int) -> None:
        recorder, mapper = self.app.recorder, self.app.mapper
        start = 1
        while True:
            notes = recorder.select_notifications(start=start, limit=page)
            if not notes:
                break
            for note, fact in zip(notes, self._decode(mapper, notes), strict=True):
                self.rows += 1
                self._row(note, fact)
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
        kind = _classify(note.topic, self.topics)
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
        if stream.kind not in _IDENTITY:  # another aggregate's stream: counted only
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
        if isinstance(stream, _Round):
            self._round_fact(stream, fact)
        elif isinstance(stream, _Table):
            self._table_fact(stream, fact)
        elif isinstance(stream, _Wallet):
            self._wallet_fact(stream, fact)

    def _open(self, uuid: UUID, kind: str) -> _Stream:
        stream: _Stream
        if kind == "round":
            stream = _Round(uuid, kind)
        elif kind == "table":
            stream = _Table(uuid, kind)
        elif kind == "wallet":
            stream = _Wallet(uuid, kind)
        else:
            stream = _Stream(uuid, kind)
        self.streams[uuid] = stream
        return stream

    def _created(self, stream: _Stream, fact: RecordedEvent) -> None:
        key, uuid_of = _IDENTITY[stream.kind]
        ident = fact.data.get(key)
        if type(ident) is not str or uuid_of(ident, fact.data) != stream.uuid:
            # not the stream of the id it names: verified on its own, as "<kind> stream <uuid>"
            stream.fail("stream", 1, f"its creation names {stream.kind} {ident!r}, whose stream is not {stream.uuid}")
            return
        stream.ident = ident
        if isinstance(stream, _Round):
            stream.previous = genesis_digest(ident)
            stream.table_id = str(fact.data.get("table_id", ""))
            stream.facts.append(fact)
            self.rounds.setdefault(ident, stream)
        elif isinstance(stream, _Table):
            stream.previous = genesis_digest(f"table:{ident}")
            stream.snapshots = self._snapshots(stream.uuid)
            self.tables.setdefault(ident, stream)
            self._table_snapshots(stream, 1)
        elif isinstance(stream, _Wallet):
            stream.previous = ag.wallet_genesis(ident)
            stream.snapshots = self._snapshots(stream.uuid)
            self.wallets.setdefault(ident, stream)
            self._wallet_snapshots(stream, 1)
        elif stream.kind == "seed":
            self.seeds.setdefault(ident, (stream, fact))
        elif stream.kind == "request":
            self.requests += 1
            self._request(stream, fact)

    def _snapshots(self, uuid: UUID) -> _Snapshots | None:
        store = self.snapshot_store
        if store is None or getattr(store, "recorder", None) is None:
            return None
        return _Snapshots(uuid, store)

    # -- chained streams -----------------------------------------------------------------

    def _chain(self, stream: _Stream, fact: RecordedEvent) -> None:
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

    def _round_fact(self, record: _Round, fact: RecordedEvent) -> None:
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

    def _table_fact(self, table: _Table, fact: RecordedEvent) -> None:
        self._chain(table, fact)
        cls = tc.TABLE_EVENT_BY_KIND.get(fact.kind)
        if cls is None:
            table.fail("stream", fact.position, "is not a table event", fact.kind)
            return
        try:
            table.state = tc.evolve_table(table.state, from_data(cls, fact.data))
        except Exception as error:
            table.fail("stream", fact.position, f"cannot be folded: {error}", fact.kind)
            return
        if fact.kind == tc.RoundStarted.kind:
            table.started.append((str(fact.data.get("round_id")), fact.position))
        elif fact.kind == tc.RoundFinished.kind:
            table.finished.append((str(fact.data.get("round_id")), fact.position, fact.data))
        self._table_snapshots(table, fact.position)

    def _wallet_fact(self, wallet: _Wallet, fact: RecordedEvent) -> None:
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
            wallet.undigested = wallet.undigested or position
            if wallet.unchained:
                wallet.unchained[1:] = [position, wallet.unchained[2] + 1]
            else:
                wallet.unchained = [position, position, 1]
            if wallet.chained and not wallet.chain_broken:
                wallet.chain_broken = True
                wallet.fail("chain", position, "carries no digest, after chained events", fact.kind)
        elif not wallet.chain_broken:
            wallet.chained = True
            try:
                digest = wallet_digest(wallet.previous, kind, data, position, fact.timestamp, balance, reservations)
            except (TypeError, ValueError):
                digest = ""
            if digest != fact.digest:
                wallet.chain_broken = True
                wallet.fail("chain", position, "does not match its digest", fact.kind)
            else:
                wallet.previous = digest
        wallet.balance, wallet.reservations = balance, reservations
        round_id = data.get("round_id")
        if kind == "Deposited":
            wallet.deposits += data["amount"]
        elif kind == "Withdrawn":
            wallet.withdrawals += data["amount"]
        elif isinstance(round_id, str):
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
        self._wallet_snapshots(wallet, position)

    # -- snapshots -----------------------------------------------------------------------

    def _wallet_snapshots(self, wallet: _Wallet, position: int) -> None:
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

    def _table_snapshots(self, table: _Table, position: int) -> None:
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

    def _close_round(self, record: _Round) -> None:
        """A closed round: replayed and its money checked now; its facts are let go."""
        replay = Verdict("")
        check_replay(replay, record.facts)
        nets = check_money(replay, record.facts)
        record.replayed = replay.checks
        self._summarise(record)
        record.nets = nets or record.nets
        record.facts = []

    def _round_verdict(self, record: _Round) -> Verdict:
        """The round's verdict once its stream is read: rows, chain, replay and money, completeness."""
        verdict = record.verdict = Verdict(f"round {record.ident or record.uuid}")
        last = record.last.position if record.last is not None else 0
        verdict.add("stream", "stream" not in record.problems, record.problems.get("stream", f"positions 1 to {last}"))
        linked = f"{max(last - 1, 0)} events linked"
        verdict.add("chain", "chain" not in record.problems, record.problems.get("chain", linked))
        verdict.checks.extend(record.replayed)
        if "complete" in record.problems:
            verdict.add("complete", False, record.problems["complete"])
        return verdict

    def _summarise(self, record: _Round) -> None:
        """What the round's own events say of its table, wallets and seed."""
        reserved: dict[str, int] = {}
        for fact in record.facts:
            data = fact.data
            try:
                if fact.kind == re.RoundOpened.kind:
                    record.round_no = data["round_no"]
                    record.banker = data["banker_player"]
                    if data["table_id"] != record.table_id or data["round_id"] != record.ident:
                        record.fail("stream", fact.position, "its opening names another round or table")
                elif fact.kind == re.ShuffleCommitted.kind:
                    record.commitment = data["commitment"]
                elif fact.kind == re.BetPlaced.kind:
                    reserved[data["player"]] = reserved.get(data["player"], 0) + data["reserved"]
                    if data.get("banker_reserved") and record.banker:
                        reserved[record.banker] = reserved.get(record.banker, 0) + data["banker_reserved"]
                elif fact.kind == re.SideBetPlaced.kind:
                    reserved[data["player"]] = reserved.get(data["player"], 0) + data["reserved"]
                elif fact.kind == re.RoundSettled.kind:
                    reserved = {player: held for player, held, _net in data["wallets"]}
                    record.nets = {player: net for player, _held, net in data["wallets"]}
                    record.house_net, record.commission = data["house_net"], data["commission"]
                elif fact.kind == re.RoundVoided.kind:
                    reserved = {player: held for player, held in data["wallets"]}
                elif fact.kind == re.RoundClosed.kind:
                    record.outcome = data["outcome"]
            except (KeyError, TypeError, ValueError) as error:
                record.fail("stream", fact.position, f"is malformed: {error!r}", fact.kind)
        record.reserved = reserved
        record.last_digest = record.last.digest if record.last is not None else ""

    # -- command records -----------------------------------------------------------------

    def _request(self, stream: _Stream, fact: RecordedEvent) -> None:
        """A request's result names the positions it wrote: its stream's last ones when it was saved
        (a request's record is saved last in its transaction), caused by it."""
        result = fact.data.get("result")
        name = f"request {stream.ident!r}"
        if not isinstance(result, dict):
            self.request_problems.append(f"{name} position 1: its result is not a stream's range")
            return
        uuid_of = _TARGETS.get(result.get("stream", ""))
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
        # request id of two callers, scoped apart, may run on in one stream: hence not "exactly").
        if run is None or run[0] != stream.ident or run[1] > max(first, 2):
            run = run or ("", 0)
            self.request_problems.append(
                f"{name} position 1: {where} were not all caused by it (from position {run[1]}: request {run[0]!r})"
            )

    # -- the end: streams against each other -----------------------------------------------

    def verdicts(self) -> list[Verdict]:
        out: list[Verdict] = []
        round_verdicts = self._rounds_against_tables()
        out.extend(round_verdicts)
        out.extend(self._table_verdicts())
        out.extend(self._wallet_verdicts())
        out.extend(self._unidentified_verdicts())
        out.append(self._seed_verdict())
        out.append(self._request_verdict())
        out.append(self._store_verdict())
        return out

    def _rounds_against_tables(self) -> list[Verdict]:
        started: dict[str, tuple[_Table, int]] = {}
        for table in self.tables.values():
            for round_id, position in table.started:
                if round_id in started:
                    table.fail("rounds", position, f"round_started of round {round_id}, started before")
                started.setdefault(round_id, (table, position))
        out: list[Verdict] = []
        for round_id, record in self.rounds.items():
            verdict = self._open_round(record) if record.closed is None else self._round_verdict(record)
            start = started.pop(round_id, None)
            if start is None:
                verdict.add("table record", False, f"position 1: table {record.table_id} never started it")
            elif start[0].ident != record.table_id:
                verdict.add("table record", False, f"position 1: table {start[0].ident} started it, not its own")
            elif not verdict.ok:
                table, position = start
                table.fail("rounds", position, f"round_started of round {round_id}, whose stream fails verification")
            out.append(verdict)
        for round_id, (table, position) in started.items():
            verdict = Verdict(f"round {round_id}")
            verdict.add(
                "stream",
                False,
                f"position 1: missing: table {table.ident} started it at position {position}, "
                "and the store holds no row of it",
            )
            table.fail("rounds", position, f"round_started of round {round_id}, whose stream is missing")
            out.append(verdict)
        self._pins()
        return out

    def _open_round(self, record: _Round) -> Verdict:
        verdict = self._round_verdict(record)
        self._summarise(record)
        record.facts = []
        table = self.tables.get(record.table_id)
        last = record.last
        end = f"the stream ends at position {last.position} {_where(last)}" if last is not None else "it is empty"
        if table is not None and table.state.round_id == record.ident:
            verdict.subject += " (open)"
            verdict.add("open", True, f"the current round of table {table.ident}; {end}")
        else:
            position = last.position + 1 if last is not None else 1
            verdict.add("complete", False, f"position {position}: missing: {end} without round_closed")
        return verdict

    def _pins(self) -> None:
        """Each table's round_finished against its round's own record; the house ledger."""
        by_table: dict[str, list[_Round]] = {}
        for each in self.rounds.values():
            by_table.setdefault(each.table_id, []).append(each)
        for table in self.tables.values():
            house = commission = 0
            pinned: set[str] = set()
            for round_id, position, data in table.finished:
                record = self.rounds.get(round_id)
                where = f"position {position} (round_finished of round {round_id})"
                if round_id in pinned:
                    table.fail("rounds", position, f"round_finished of round {round_id}, finished before")
                    continue
                pinned.add(round_id)
                if record is None or record.verdict is None:
                    table.fail("rounds", position, f"round_finished of round {round_id}, whose stream is missing")
                    continue
                booked = (data.get("round_digest"), data.get("outcome"), data.get("house_net"), data.get("commission"))
                own = (record.last_digest, record.outcome, record.house_net, record.commission)
                if record.closed is None:
                    detail = f"table {table.ident} {where} finished it, but its stream has no round_closed"
                    record.verdict.add("table record", False, detail)
                    table.fail("rounds", position, f"round_finished of round {round_id}, which is not complete")
                elif booked != own:
                    names = ("last digest", "outcome", "house_net", "commission")
                    first = next(n for n, a, b in zip(names, booked, own, strict=True) if a != b)
                    record.verdict.add("table record", False, f"table {table.ident} {where}: its {first} differs")
                    table.fail(
                        "rounds", position, f"round_finished of round {round_id}: its {first} is not the round's"
                    )
                else:
                    record.verdict.add("table record", True, f"table {table.ident} pins the round's last digest")
                house += record.house_net
                commission += record.commission
            for record in by_table.get(table.ident, ()):
                if record.closed is not None and record.ident not in pinned:
                    assert record.verdict is not None
                    record.verdict.add("table record", False, f"table {table.ident} has no round_finished of it")
            books = (table.state.house_net, table.state.commission)
            if books != (house, commission):
                table.fail(
                    "house ledger",
                    table.last.position if table.last is not None else 1,
                    f"the table books house_net {books[0]} and commission {books[1]}; "
                    f"its rounds' settlements {house} and {commission}",
                )
            table.ledger = f"house_net {house}, commission {commission} over {len(pinned)} rounds"

    def _table_verdicts(self) -> list[Verdict]:
        out = []
        for table in self.tables.values():
            _beyond(table, table.snapshots)
            verdict = Verdict(f"table {table.ident}")
            last = table.last.position if table.last is not None else 0
            notes = {
                "stream": f"positions 1 to {last}",
                "chain": f"{max(last - 1, 0)} events linked",
                "rounds": f"{len(table.started)} rounds started, {len(table.finished)} finished, as their streams say",
                "house ledger": table.ledger,
                "snapshots": _snapshot_note(table.snapshots),
            }
            _fill(verdict, table, notes)
            out.append(verdict)
        return out

    def _wallet_verdicts(self) -> list[Verdict]:
        played: dict[str, dict[str, _Round]] = {}
        for record in self.rounds.values():
            for player in record.reserved.keys() | record.nets.keys():
                played.setdefault(player, {})[record.ident] = record
        out = []
        for wallet_id, wallet in self.wallets.items():
            _beyond(wallet, wallet.snapshots)
            rounds = played.pop(wallet_id, {})
            nets = self._wallet_rounds(wallet, rounds)
            expected = wallet.deposits - wallet.withdrawals + nets
            last = wallet.last.position if wallet.last is not None else 1
            if wallet.balance != expected:
                wallet.fail(
                    "balance",
                    last,
                    f"the events fold to {wallet.balance}; deposits {wallet.deposits} - withdrawals "
                    f"{wallet.withdrawals} + the nets of its rounds {nets} = {expected}",
                )
            elif wallet.balance < sum(wallet.reservations.values()) or wallet.balance < 0:
                wallet.fail("balance", last, f"it holds {wallet.balance} and reserves {wallet.reservations}")
            verdict = Verdict(f"wallet {wallet_id}")
            chain = f"{max(last - 1, 0)} events linked"
            if wallet.unchained and "chain" not in wallet.problems:
                first, upto, count = wallet.unchained
                wallet.fail(
                    "chain",
                    first,
                    f"unchained: positions {first} to {upto} ({count} events) carry no digest "
                    "(written before wallets were chained)",
                )
            notes = {
                "stream": f"positions 1 to {last}",
                "chain": chain,
                "snapshots": _snapshot_note(wallet.snapshots),
                "rounds": f"{len(rounds)} rounds: reservations, releases and nets as the rounds say",
                "balance": f"{wallet.balance} = deposits {wallet.deposits} - withdrawals {wallet.withdrawals} "
                f"+ the nets of its rounds {nets}",
            }
            _fill(verdict, wallet, notes)
            out.append(verdict)
        for player, rounds in played.items():  # rounds name a wallet the store does not hold
            for record in rounds.values():
                assert record.verdict is not None
                record.verdict.add(f"wallet {player}", False, f"the round names wallet {player}, which the store lacks")
        return out

    def _wallet_rounds(self, wallet: _Wallet, rounds: dict[str, _Round]) -> int:
        """The wallet's record of each round against the round's own; returns the nets of its rounds."""
        nets = 0
        for round_id, (held, reserve_at, closing, released, net, closed_at, _n) in wallet.rounds.items():
            record = rounds.get(round_id)
            at = closed_at or reserve_at
            if record is None:
                what = "which the store does not hold" if round_id not in self.rounds else "which names no stake of it"
                wallet.fail("rounds", reserve_at, f"it reserved for or settled round {round_id}, {what}")
                continue
            want = record.reserved.get(wallet.ident, 0)
            problem = ""
            if held != want:
                problem = f"it reserved {held} for round {round_id}; the round {want}"
            elif record.closed is None:
                if closing:
                    problem = f"it closed round {round_id}, whose stream has no round_closed"
            elif record.outcome == "voided":
                if closing != "ReservationReleased" or released != want:
                    problem = f"round {round_id} was voided: {want} is released, not {closing or 'nothing'}"
            elif closing != "RoundSettled" or released != want or net != record.nets.get(wallet.ident, 0):
                problem = (
                    f"round {round_id} releases {want} and pays {record.nets.get(wallet.ident, 0)}; "
                    f"the wallet applied {closing or 'nothing'} ({released}, {net})"
                )
            if problem:
                wallet.fail("rounds", at, problem)
            if record.verdict is not None and record.closed is not None:
                if problem:
                    detail = f"position {at} of wallet {wallet.ident}: {problem}"
                    record.verdict.add(f"wallet {wallet.ident}", False, detail)
                else:
                    applied = f"wallet applied {net}, round says {record.nets.get(wallet.ident, 0)}"
                    record.verdict.add(f"wallet {wallet.ident}", True, applied)
        for round_id, record in rounds.items():
            if round_id not in wallet.rounds:
                detail = f"round {round_id} reserves or pays {wallet.ident}, and the wallet holds no entry of it"
                wallet.fail("rounds", wallet.last.position if wallet.last else 1, detail)
                if record.verdict is not None:
                    record.verdict.add(f"wallet {wallet.ident}", False, detail)
            if record.closed is not None and record.outcome != "voided":
                nets += record.nets.get(wallet.ident, 0)
        for round_id in wallet.reservations:
            record = rounds.get(round_id)
            if record is not None and record.closed is not None:
                at = wallet.rounds[round_id][1]
                wallet.fail("rounds", at, f"it still reserves funds for round {round_id}, which is closed")
        return nets

    def _unidentified_verdicts(self) -> list[Verdict]:
        """Round, table and wallet streams that name no id of theirs (a forged or beheaded stream)."""
        out = []
        for stream in self.streams.values():
            if stream.kind in ("round", "table", "wallet") and not stream.ident:
                verdict = Verdict(stream.label)
                problem = stream.problems.get("stream", "position 1: the stream has no creation row")
                verdict.add("stream", False, problem)
                if "chain" in stream.problems:
                    verdict.add("chain", False, stream.problems["chain"])
                out.append(verdict)
        return out

    def _seed_verdict(self) -> Verdict:
        verdict = Verdict("sealed seeds")
        problems: list[str] = []
        sealed: list[str] = []  # open rounds' seeds that do not open to their commitment
        opened = unopened = 0
        for stream in self.streams.values():
            if stream.kind == "seed" and stream.problems:
                check = next(iter(stream.problems))
                problems.append(f"seed of round {stream.ident or stream.uuid} {stream.problems[check]}")
            elif stream.kind == "seed" and stream.rows != 1:
                problems.append(f"seed of round {stream.ident} position 2: more rows than its creation")
        missing = [r for r in self.rounds.values() if r.ident not in self.seeds]
        for record in missing:
            problems.append(f"round {record.ident} position 1: it has no sealed seed stream")
        for round_id, (stream, fact) in self.seeds.items():
            found = self.rounds.get(round_id)
            if found is None:
                if stream.rows == 1 and not stream.problems:
                    problems.append(f"seed of round {round_id} position 1: the store holds no round {round_id}")
                continue
            seed = self._open_seed(round_id, fact) if found.closed is None else b""
            if seed == b"":
                continue  # a closed round's seed is revealed in its record (the replay checks it)
            if seed is None:
                unopened += 1
                continue
            if isinstance(seed, str):
                problem = f"seed of round {round_id} position 1: {seed}"
            elif commitment(seed) != found.commitment:
                problem = f"seed of round {round_id} position 1: it opens to a seed the round is not committed to"
            else:
                opened += 1
                continue
            sealed.append(problem)
            if found.verdict is not None:
                found.verdict.add("seed", False, problem)
        verdict.add(
            "streams",
            not problems,
            problems[0] if problems else f"{len(self.seeds)} seeds, each one creation row of a round the store holds",
        )
        note = f"the seeds of {opened} open round(s) open to their commitments"
        note = f"{note}; {unopened} not opened (no vault key here)" if unopened else note
        verdict.add("open rounds", not sealed, sealed[0] if sealed else note)
        return verdict

    def _open_seed(self, round_id: str, fact: RecordedEvent) -> bytes | str | None:
        """The seed of an open round's sealed seed (bytes), what is wrong with it (text), or None without
        its key here (the key is read only now: an audit of closed rounds needs none)."""
        vault = self.vault
        data = fact.data
        try:
            key_id = getattr(vault, "key_id", None)
        except Exception:  # a deferred key that is not to be had
            return None
        if vault is None or data.get("key_id") != key_id:
            return None
        try:
            seed: bytes = vault.open(
                data["nonce"], data["sealed"], round_id, ag.round_uuid(round_id), int(data.get("aad_version", 1))
            )
        except Exception:
            return "it does not open under the vault key it names"
        return seed

    def _request_verdict(self) -> Verdict:
        verdict = Verdict("command records")
        problems = list(self.request_problems)
        for stream in self.streams.values():
            if stream.kind == "request" and stream.problems:
                check = next(iter(stream.problems))
                problems.insert(0, f"request {stream.ident or stream.uuid} {stream.problems[check]}")
        verdict.add(
            "records",
            not problems,
            problems[0]
            if problems
            else f"{self.requests} records, each one creation row naming what its request wrote",
        )
        return verdict

    def _store_verdict(self) -> Verdict:
        verdict = Verdict("store")
        counts: dict[str, int] = {}
        for stream in self.streams.values():
            counts[stream.kind] = counts.get(stream.kind, 0) + 1
        summary = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
        verdict.add("log", not self.unknown, self.unknown[0] if self.unknown else f"{self.rows} rows: {summary}")
        lacking = [
            f"{stream.label} position {stream.undigested}: no digest"
            for stream in self.streams.values()
            if stream.undigested
        ]
        verdict.add(
            "digests",
            not lacking,
            lacking[0] if lacking else "every row after its stream's creation carries a digest",
        )
        if self.others:
            others = ", ".join(f"{n} rows of {kind}" for kind, n in sorted(self.others.items()))
            verdict.add("other streams", True, f"{others}: not verified here")
        return verdict


def _beyond(stream: _Stream, snapshots: _Snapshots | None) -> None:
    """Snapshots left once the stream is read are of versions it does not reach."""
    if snapshots is None:
        return
    last = stream.last.position if stream.last is not None else 0
    for snapshot in snapshots.due(2**62):
        version = snapshot.originator_version
        stream.fail("snapshots", version, f"the snapshot at version {version} is beyond the stream's end ({last})")


def _snapshot_note(snapshots: _Snapshots | None) -> str:
    if snapshots is None:
        return "no snapshot store"
    if not snapshots.checked:
        return "no snapshot"
    return f"{snapshots.checked} snapshot(s), each the fold of the events it summarises"


def _fill(verdict: Verdict, stream: _Stream, notes: dict[str, str]) -> None:
    """The stream's checks in order: each fails with its first problem, or passes with its note."""
    for name, note in notes.items():
        problem = stream.problems.get(name)
        verdict.add(name, problem is None, problem if problem is not None else note)
