"""What a whole-store verification keeps of each stream while it reads the log (``audit.store``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from eventsourcing.utils import resolve_topic

from pokdeng_core import table_state as ts
from pokdeng_service.audit.verdicts import Verdict
from pokdeng_service.store import aggregates as ag
from pokdeng_service.store.facts import RecordedEvent

# ---------------------------------------------------------------------------------------
# streams as they are read

SNAPSHOT_PAGE = 100


@dataclass(eq=False)
class StreamRead:
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
class RoundRead(StreamRead):
    table_id: str = ""
    facts: list[RecordedEvent] = field(default_factory=list)
    closed: RecordedEvent | None = None
    replayed: list[Any] = field(default_factory=list)  # the replay's and money's checks, made at the close
    verdict: Verdict | None = None
    # what the round says, for the other streams (filled when it closes, or at the end)
    round_no: int = 0
    currency: str = "THB"  # its opening's (the amounts its verdict says: pokdeng_service.money)
    banker: str | None = None
    outcome: str = ""
    house_net: int = 0
    commission: int = 0
    nets: dict[str, int] = field(default_factory=dict)
    reserved: dict[str, int] = field(default_factory=dict)
    commitment: str = ""
    last_digest: str = ""


@dataclass(eq=False)
class TableRead(StreamRead):
    state: ts.TableState = field(default_factory=ts.TableState)
    started: list[tuple[str, int]] = field(default_factory=list)  # (round id, position)
    finished: list[tuple[str, int, dict[str, Any]]] = field(default_factory=list)  # (round id, position, data)
    snapshots: SnapshotPages | None = None
    ledger: str = ""


@dataclass(eq=False)
class WalletRead(StreamRead):
    currency: str = "THB"  # its Opened event's (the amounts its verdict says: pokdeng_service.money)
    balance: int = 0
    reservations: dict[str, int] = field(default_factory=dict)
    deposits: int = 0
    withdrawals: int = 0
    unchained: list[int] = field(default_factory=list)  # [first, last, count] of rows without a digest
    chained: bool = False
    # per round: [reserved, first reserve position, closing kind, released, net, closing position, closings]
    rounds: dict[str, list[Any]] = field(default_factory=dict)
    snapshots: SnapshotPages | None = None


@dataclass(eq=False)
class SnapshotPages:
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
IDENTITY: dict[str, tuple[str, Callable[[str, dict[str, Any]], UUID]]] = {
    "round": ("round_id", lambda ident, _data: ag.round_uuid(ident)),
    "table": ("table_id", lambda ident, _data: ag.table_uuid(ident)),
    "wallet": ("wallet_id", lambda ident, _data: ag.wallet_uuid(ident)),
    "seed": ("round_id", lambda ident, _data: ag.seed_uuid(ident)),
    # (request ids are scoped to the caller that sent them; records before scopes have none)
    "request": ("request_id", lambda ident, data: ag.command_uuid(ident, str(data.get("scope") or ""))),
}
"""Per stream kind: the creation's field naming the stream's id, and the uuid that id has."""
TARGETS = {"round": ag.round_uuid, "table": ag.table_uuid, "wallet": ag.wallet_uuid}


def classify(topic: str, cache: dict[str, tuple[str, bool] | None]) -> tuple[str, bool] | None:
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


def where(fact: RecordedEvent) -> str:
    return f"({fact.kind})"


# ---------------------------------------------------------------------------------------
# the pass over the store
