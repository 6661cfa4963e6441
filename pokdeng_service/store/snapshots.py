"""Snapshots the application trusts: each one checked against the stored events it summarises.

The library hands a repository an aggregate's latest snapshot and folds only the events after
it, so a snapshot row edited in the store (a wallet's balance raised) would be believed, served
and paid out. ``CheckedSnapshots`` is the application's snapshot store
(``PokdengApp.construct_snapshot_store``): a snapshot of a ``Wallet`` or a ``TableRecord`` leaves
it only if it agrees with the stored events; one that does not is withheld, so that the
repository folds the stream from its first event instead, and an alert is logged (logger
``pokdeng.integrity``, CRITICAL, once per snapshot and process).

* A wallet's snapshot at version v must name the wallet its stream belongs to, and its
  ``last_digest`` must be the stored digest of event v, which must recompute from event v-1's
  digest (the wallet's genesis before its first chained event), event v and the snapshot's own
  balance and reservations: the wallet's chain digests the state each event leaves
  (``codec.wallet_digest``). One read of two rows.
* A table's snapshot at version v must name its table, its ``last_digest`` must be the stored
  digest of event v, and its state must equal the fold of events 1..v (the table's chain does
  not digest its state): one read of the stream up to v.
* A snapshot this process wrote, or checked, is remembered (``REMEMBER`` of them) with what it
  holds; loaded again, and still holding exactly that, it is handed out without reading the
  events again (so a repeated load costs what the library's does). A changed row is checked again.
* A snapshot taken before wallets were chained (no ``last_digest``) cannot be checked: it is
  withheld too (logged at INFO), until the library takes the next one.
* Snapshots of other aggregates are handed out as the library would.

``wallet_snapshot_problem`` and ``table_snapshot_problem`` say what is wrong with one snapshot
(None if nothing); the whole-store verification (``audit.store``) compares every snapshot with
its own fold instead.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any
from uuid import UUID

from eventsourcing.domain import Snapshot
from eventsourcing.persistence import AggregateRecorder, EventStore, Mapper, Recording
from eventsourcing.utils import resolve_topic

from pokdeng_core.table_state import TableState
from pokdeng_service.store import aggregates as ag
from pokdeng_service.store import fastpaths
from pokdeng_service.store.codec import genesis_digest, wallet_digest
from pokdeng_service.store.facts import RecordedEvent

log = logging.getLogger("pokdeng.integrity")

REMEMBER = 4096
"""Snapshots remembered as checked (or written) by this process."""


def wallet_snapshot_problem(
    uuid: UUID, version: int, state: dict[str, Any], at: dict[int, RecordedEvent]
) -> str | None:
    """What is wrong with a wallet's snapshot at ``version`` (its ``state``), given the stored events
    ``at`` its version and the one before (by position); None if it agrees with them."""
    wallet_id = state.get("wallet_id")
    if type(wallet_id) is not str or ag.wallet_uuid(wallet_id) != uuid:
        return f"it names wallet {wallet_id!r}, whose stream is not {uuid}"
    balance, reservations, last = state.get("balance"), state.get("reservations"), state.get("last_digest")
    if type(balance) is not int or type(reservations) is not dict:
        return "its balance or reservations are not a wallet's"
    if any(type(k) is not str or type(v) is not int for k, v in reservations.items()):
        return "its reservations are not amounts by round"
    genesis = ag.wallet_genesis(wallet_id)
    if version == 1:
        if balance or reservations or last != genesis:
            return "it is of the wallet as opened, yet holds money or a chain"
        return None
    fact = at.get(version)
    if fact is None:
        return f"the stream has no event {version}"
    if not fact.digest:
        return f"event {version} ({fact.kind}) carries no digest to check it against"
    if last != fact.digest:
        return f"its chain digest is not event {version}'s ({fact.kind})"
    before = at.get(version - 1)
    previous = before.digest if before is not None and before.digest else genesis
    try:
        expected = wallet_digest(previous, fact.kind, fact.data, version, fact.timestamp, balance, reservations)
    except (TypeError, ValueError):
        return "its state cannot be digested"
    if expected != fact.digest:
        return (
            f"its balance {balance} and reservations {sum(reservations.values())} are not what "
            f"event {version} ({fact.kind}) left"
        )
    return None


def table_snapshot_problem(uuid: UUID, version: int, state: dict[str, Any], fact: RecordedEvent | None) -> str | None:
    """What is wrong with a table snapshot's identity and chain digest, given the stored event at its
    version (``fact``); None if they hold. Its state is compared with the fold separately."""
    table_id = state.get("table_id")
    if type(table_id) is not str or ag.table_uuid(table_id) != uuid or state.get("stream_id") != table_id:
        return f"it names table {table_id!r}, whose stream is not {uuid}"
    if not isinstance(state.get("state"), TableState):
        return "its state is not a table's"
    last = state.get("last_digest")
    if version == 1:
        return None if last == genesis_digest(f"table:{table_id}") else "its chain digest is not the genesis"
    if fact is None:
        return f"the stream has no event {version}"
    if last != fact.digest:
        return f"its chain digest is not event {version}'s ({fact.kind})"
    return None


class CheckedSnapshots(EventStore[UUID]):
    """The application's snapshot store: a wallet or table snapshot leaves it only if it agrees with
    the stored events it summarises (see the module's description)."""

    def __init__(self, mapper: Mapper[UUID], recorder: AggregateRecorder, events: EventStore[UUID]) -> None:
        super().__init__(mapper, recorder)
        self.events = events  # the application's events: its recorder and mapper read the rows
        self._known: OrderedDict[tuple[UUID, int], tuple[Any, ...]] = OrderedDict()
        self._refused: set[tuple[UUID, int]] = set()
        self._lock = threading.Lock()

    def put(self, domain_events: Sequence[Any], **kwargs: Any) -> list[Recording[UUID]]:
        """Store snapshots; those of wallets and tables are remembered as agreeing with their events
        (this process folded them)."""
        recordings = super().put(domain_events, **kwargs)
        for snapshot in domain_events:
            if isinstance(snapshot, Snapshot) and isinstance(snapshot.state, dict):
                self._remember(snapshot, _aggregate_class(snapshot.topic))
        return recordings

    def get(
        self,
        originator_id: UUID,
        *,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> Iterator[Any]:
        """The stored snapshots asked for, less those that do not agree with their events."""
        for snapshot in super().get(originator_id, gt=gt, lte=lte, desc=desc, limit=limit):
            problem = self.problem(snapshot)
            if problem is None:
                yield snapshot
            else:
                self._refuse(snapshot, problem)

    def problem(self, snapshot: Any) -> str | None:
        """What is wrong with one snapshot (None: it agrees with the stored events, or is not checked
        here; ``""``: a wallet snapshot taken before wallets were chained, which cannot be checked)."""
        cls = _aggregate_class(getattr(snapshot, "topic", ""))
        if cls is not ag.Wallet and cls is not ag.TableRecord:
            return None
        state = snapshot.state
        if not isinstance(state, dict):
            return "it holds no state"
        key = (snapshot.originator_id, snapshot.originator_version)
        with self._lock:
            known = self._known.get(key)
        if known is not None and known == _fingerprint(cls, state):
            return None  # checked (or written) by this process, as it is now
        problem = self._check(cls, snapshot, state)
        if problem is None:
            self._remember(snapshot, cls)
        return problem

    def _check(self, cls: Any, snapshot: Any, state: dict[str, Any]) -> str | None:
        uuid, version = snapshot.originator_id, snapshot.originator_version
        if cls is ag.Wallet:
            if not state.get("last_digest"):
                return ""
            return wallet_snapshot_problem(uuid, version, state, self._facts(uuid, version, 2))
        problem = table_snapshot_problem(uuid, version, state, self._facts(uuid, version, 1).get(version))
        if problem is not None:
            return problem
        table_state = state["state"]
        folded = fastpaths.project(None, self.events.get(uuid, lte=version))
        if not isinstance(folded, ag.TableRecord) or folded.version != version:
            return f"the stream does not fold to a table at version {version}"
        if folded.state != table_state:
            return f"its state is not the fold of events 1 to {version}: {_difference(table_state, folded.state)}"
        if folded.last_digest != state.get("last_digest"):
            return f"its chain digest is not the one events 1 to {version} end at"
        return None

    def _facts(self, uuid: UUID, version: int, count: int) -> dict[int, RecordedEvent]:
        rows = self.events.recorder.select_events(uuid, gt=max(version - count, 0), lte=version)
        return {fact.position: fact for fact in fastpaths.facts_of_rows(self.events.mapper, rows)}

    def _remember(self, snapshot: Any, cls: Any) -> None:
        fingerprint = _fingerprint(cls, snapshot.state)
        if fingerprint is None:
            return
        key = (snapshot.originator_id, snapshot.originator_version)
        with self._lock:
            self._known[key] = fingerprint
            self._known.move_to_end(key)
            while len(self._known) > REMEMBER:
                self._known.popitem(last=False)

    def _refuse(self, snapshot: Any, problem: str) -> None:
        key = (snapshot.originator_id, snapshot.originator_version)
        with self._lock:
            first = key not in self._refused
            if first:
                if len(self._refused) >= REMEMBER:
                    self._refused.clear()
                self._refused.add(key)
        if not first:
            return
        if not problem:
            log.info(
                "snapshot of %s at version %d predates the wallet chain: loaded from its events",
                snapshot.originator_id,
                snapshot.originator_version,
            )
            return
        log.critical(
            "SNAPSHOT REFUSED: the snapshot of stream %s at version %d does not agree with its events (%s): "
            "loaded from its events instead",
            snapshot.originator_id,
            snapshot.originator_version,
            problem,
            extra={"refused_snapshot": f"{snapshot.originator_id}@{snapshot.originator_version}"},
        )


def _fingerprint(cls: Any, state: dict[str, Any]) -> tuple[Any, ...] | None:
    """What a remembered snapshot must still hold to be trusted without reading its events again."""
    if cls is ag.Wallet and state.get("last_digest"):
        reservations = state.get("reservations")
        held = dict(reservations) if isinstance(reservations, dict) else reservations
        return (state.get("wallet_id"), state.get("last_digest"), state.get("balance"), held)
    if cls is ag.TableRecord and isinstance(state.get("state"), TableState):
        return (state.get("table_id"), state.get("stream_id"), state.get("last_digest"), state["state"])
    return None


_CLASSES: dict[str, Any] = {}


def _aggregate_class(topic: str) -> Any:
    cls = _CLASSES.get(topic)
    if cls is None:
        try:
            cls = resolve_topic(topic)
        except Exception:
            return None
        _CLASSES[topic] = cls
    return cls


def _difference(snapshot: TableState, folded: TableState) -> str:
    """The first field of a table's state where a snapshot and the fold differ."""
    for name in TableState.__dataclass_fields__:
        mine, theirs = getattr(snapshot, name), getattr(folded, name)
        if mine != theirs:
            return f"{name} {mine!r}, the events say {theirs!r}"
    return "no field differs"
