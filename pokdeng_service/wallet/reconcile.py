"""A period's transactions compared: pokdeng's record and the platform's (``pokdeng wallet reconcile``).

pokdeng's side is every ``WalletTransactions`` stream of every partition (read from the store,
folded with ``outbox.step``); the platform's is its ``ListTransactions`` for the period, widened by
``margin`` on both sides (a retry can be recorded by the platform a little after pokdeng requested
it). A transaction is in the period when pokdeng requested it in ``[since, until)``, or, for one
pokdeng never recorded, when the platform recorded it then. Each is compared by tx id:

* a debit accepted (its bet placed) and not rolled back: the platform applied it, with the same
  player and amount, and has not rolled it back;
* a debit refused or rolled back: the platform holds no money for it (no applied debit, or the
  debit and its rollback);
* a credit applied: the platform applied it, same player and amount; a credit refused: listed
  (the player is owed it);
* a transaction still pending on pokdeng's side is listed as pending, not as a difference;
* a debit accepted by a round that is still open (its stake in play: no credit settles it, no rollback
  undoes it) is listed as held, not as a difference; one whose round is closed without crediting or
  rolling it back (settled outside the platform's wallet) is a difference: the player is owed it;
* a transaction of the platform that pokdeng has no record of is a difference (a debit without a
  record must never happen).

The totals per player (what moved for pokdeng and for the platform) are compared too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from eventsourcing.utils import get_topic

from pokdeng_service.store import fastpaths
from pokdeng_service.wallet.outbox import ACCEPTED, APPLIED, FACTS, REFUSED, ROLLED_BACK, Tx, WalletTransactions, step
from pokdeng_service.wallet.v1 import wallet_pb2 as pb

PAGE = 1000
TOPICS = (get_topic(WalletTransactions.Opened), *(get_topic(cls) for cls in FACTS.values()))
"""The stored topics of the outboxes' rows: the only rows of the log read."""


@dataclass(frozen=True)
class Difference:
    tx_id: str
    player: str
    round_id: str
    pokdeng: str  # what pokdeng's record says
    platform: str  # what the platform's says

    def render(self) -> str:
        return f"{self.tx_id} ({self.player}, round {self.round_id}): pokdeng {self.pokdeng}; platform {self.platform}"


@dataclass
class Reconciliation:
    since: str
    until: str
    compared: int = 0
    differences: list[Difference] = field(default_factory=list)
    pending: list[Difference] = field(default_factory=list)
    held: list[Difference] = field(default_factory=list)  # accepted debits of open rounds (their stakes in play)
    pokdeng_totals: dict[str, int] = field(default_factory=dict)  # player -> money moved (credits - debits)
    platform_totals: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.differences

    def render(self) -> str:
        lines = [f"reconciliation {self.since} .. {self.until}: {self.compared} transactions compared"]
        lines += [f"  DIFF {d.render()}" for d in self.differences]
        lines += [f"  pending {d.render()}" for d in self.pending]
        lines += [f"  held {d.render()}" for d in self.held]
        moved = sum(self.pokdeng_totals.values())
        lines.append(
            f"{len(self.differences)} differences, {len(self.pending)} pending, {len(self.held)} held by open rounds; "
            f"money moved for the players: "
            f"pokdeng {moved}, platform {sum(self.platform_totals.values())}"
        )
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "since": self.since,
            "until": self.until,
            "compared": self.compared,
            "differences": [d.__dict__ for d in self.differences],
            "pending": [d.__dict__ for d in self.pending],
            "held": [d.__dict__ for d in self.held],
            "pokdeng_totals": self.pokdeng_totals,
            "platform_totals": self.platform_totals,
        }


@dataclass
class _Ours:
    tx: Tx
    round_id: str


@dataclass
class RecordedRound:
    """One round's outbox as pokdeng's record folds it, and the partition (application) that holds it."""

    app: Any
    round_id: str
    txs: dict[str, Tx]

    def held(self) -> list[Tx]:
        """The debits whose stakes the round still holds: accepted (the bet placed), neither settled by a credit
        nor rolled back. An open round holds every accepted debit until its settlement (one credit per player,
        naming its debits) or its void (their rollbacks); a closed round holds none."""
        settled = {d for t in self.txs.values() if t.kind == "credit" for d in t.debits}
        return [t for t in self.txs.values() if t.kind == "debit" and t.status == ACCEPTED and t.tx_id not in settled]

    def pending(self) -> list[Tx]:
        return [t for t in self.txs.values() if t.pending]

    def closed(self) -> bool:
        """Whether the round is closed (settled or voided), as its own stream says (a round the store does not
        hold is not open)."""
        from pokdeng_core.machine import Phase
        from pokdeng_service.application.errors import NotFound

        if not self.round_id:
            return True
        try:
            record = self.app.load_round(self.round_id, with_shoe=False)
        except NotFound:
            return True
        return bool(record.state.phase is Phase.CLOSED)


def recorded_rounds(apps: Iterable[Any]) -> list[RecordedRound]:
    """Every round's outbox of pokdeng's record (all partitions; read by topic: only the outboxes' rows)."""
    out: list[RecordedRound] = []
    for app in apps:
        by_stream: dict[Any, RecordedRound] = {}
        recorder, mapper = app.recorder, app.mapper
        start = 1
        while True:
            notes = recorder.select_notifications(start=start, limit=PAGE, topics=TOPICS)
            if not notes:
                break
            for note, fact in zip(notes, fastpaths.facts_of_rows(mapper, notes), strict=True):
                if fact.kind == "Opened":
                    by_stream[note.originator_id] = RecordedRound(app, str(fact.data["round_id"]), {})
                    continue
                found = by_stream.setdefault(note.originator_id, RecordedRound(app, "", {}))
                found.txs = step(found.txs, fact.kind, fact.data, fact.timestamp)
            if len(notes) < PAGE:
                break
            start = notes[-1].id + 1
        out += by_stream.values()
    return out


def recorded_transactions(apps: Iterable[Any], rounds: list[RecordedRound] | None = None) -> dict[str, _Ours]:
    """Every transaction of pokdeng's record (all partitions), by tx id, as its outbox folds it."""
    out: dict[str, _Ours] = {}
    for found in recorded_rounds(apps) if rounds is None else rounds:
        for tx in found.txs.values():
            out[tx.tx_id] = _Ours(tx, found.round_id)
    return out


@dataclass(frozen=True)
class Unfinished:
    """A transaction with the platform that pokdeng has not finished, and what finishes it (``state``):

    * ``pending``: a debit, rollback or credit requested and not answered: the recovery of a server on
      ``--wallet remote`` sends it until the platform answers;
    * ``held``: a debit accepted by an open round (its stake in play): the round's settlement credits it,
      its void rolls it back, both only on a server on ``--wallet remote``;
    * ``stranded``: a debit accepted by a round that is closed and neither credited nor rolled it back (a
      round settled or voided outside the platform's wallet: no server finishes it; an operator must)."""

    tx: Tx
    round_id: str
    state: str

    def as_dict(self) -> dict[str, Any]:
        tx = self.tx
        return {
            "tx_id": tx.tx_id, "round_id": self.round_id, "player": tx.player, "amount": tx.amount,
            "kind": tx.kind, "status": tx.status, "requested_at": tx.requested_at, "state": self.state,
        }  # fmt: skip

    def render(self) -> str:
        tx = self.tx
        what = {
            "pending": f"{tx.status}",
            "held": f"held by open round {self.round_id} (its settlement or void on --wallet remote finishes it)",
            "stranded": f"STRANDED: round {self.round_id} is closed and neither credited nor rolled it back",
        }[self.state]
        return f"{tx.tx_id}: {tx.kind} of {tx.amount} ({tx.player}) {what}"


def unfinished(rounds: Iterable[RecordedRound]) -> list[Unfinished]:
    """What pokdeng's record has not finished with the platform (``Unfinished``), round by round."""
    out: list[Unfinished] = []
    for found in rounds:
        out += [Unfinished(tx, found.round_id, "pending") for tx in found.pending()]
        held = found.held()
        if held:
            state = "stranded" if found.closed() else "held"
            out += [Unfinished(tx, found.round_id, state) for tx in held]
    return out


@dataclass
class _Theirs:
    debit: Any = None
    credit: Any = None
    rollback: Any = None

    @property
    def first(self) -> Any:
        return self.debit or self.credit or self.rollback


def platform_transactions(rows: Iterable[Any]) -> dict[str, _Theirs]:
    out: dict[str, _Theirs] = {}
    for row in rows:
        entry = out.setdefault(row.tx_id, _Theirs())
        if row.kind == pb.TRANSACTION_KIND_DEBIT:
            entry.debit = row
        elif row.kind == pb.TRANSACTION_KIND_CREDIT:
            entry.credit = row
        elif row.kind == pb.TRANSACTION_KIND_ROLLBACK:
            entry.rollback = row
    return out


def _ms(text: str) -> int:
    return int(datetime.fromisoformat(text).timestamp() * 1000)


def reconcile(
    apps: Iterable[Any], platform: Any, since: datetime, until: datetime, margin: float = 300.0
) -> Reconciliation:
    """Compare pokdeng's record with the platform's (``PlatformWallet.transactions``) for ``[since, until)``."""
    since_ms, until_ms = int(since.timestamp() * 1000), int(until.timestamp() * 1000)
    report = Reconciliation(since.isoformat(), until.isoformat())
    rounds = recorded_rounds(apps)
    ours = recorded_transactions(apps, rounds)
    wide = platform.transactions(max(0, since_ms - int(margin * 1000)), until_ms + int(margin * 1000))
    theirs = platform_transactions(wide)
    for tx_id, entry in sorted(ours.items()):
        if not since_ms <= _ms(entry.tx.requested_at) < until_ms:
            continue
        report.compared += 1
        _compare(report, entry, theirs.get(tx_id, _Theirs()))
    for tx_id, found in sorted(theirs.items()):
        first = found.first
        if tx_id in ours or not since_ms <= first.recorded_unix_ms < until_ms:
            continue
        report.compared += 1
        moved = _moved(found)
        what = f"{'debited' if found.debit is not None else 'credited'} {abs(moved)}" if moved else "moved nothing"
        report.differences.append(Difference(tx_id, first.player, first.round_id, "has no record of it", what))
        report.platform_totals[first.player] = report.platform_totals.get(first.player, 0) + moved
    for item in unfinished(rounds):
        tx = item.tx
        if item.state == "pending" or not since_ms <= _ms(tx.requested_at) < until_ms:
            continue
        if item.state == "held":
            says = f"debit {tx.amount} accepted, its round open (its settlement or void finishes it)"
            report.held.append(Difference(tx.tx_id, tx.player, item.round_id, says, "holds it"))
        else:
            says = (
                f"debit {tx.amount} accepted; its round is closed and neither credited nor rolled it back (settled "
                "outside the platform's wallet): the player is owed it"
            )
            report.differences.append(Difference(tx.tx_id, tx.player, item.round_id, says, "holds it"))
    return report


def _moved(entry: _Theirs) -> int:
    """What the platform's record of one tx id moved for its player (credits +, debits -)."""
    moved = 0
    if entry.debit is not None and entry.debit.status == pb.TRANSACTION_STATUS_APPLIED:
        moved -= entry.debit.amount
    if entry.rollback is not None:
        moved += entry.rollback.amount
    if entry.credit is not None and entry.credit.status == pb.TRANSACTION_STATUS_APPLIED:
        moved += entry.credit.amount
    return moved


def _compare(report: Reconciliation, ours: _Ours, theirs: _Theirs) -> None:
    tx = ours.tx
    moved = _moved(theirs)
    report.platform_totals[tx.player] = report.platform_totals.get(tx.player, 0) + moved

    def differ(pokdeng: str, platform: str) -> None:
        report.differences.append(Difference(tx.tx_id, tx.player, ours.round_id, pokdeng, platform))

    platform = f"moved {moved}" if theirs.first is not None else "has no record of it"
    if tx.pending:
        report.pending.append(Difference(tx.tx_id, tx.player, ours.round_id, f"{tx.kind} {tx.status}", platform))
        return
    if tx.kind == "debit":
        want = -tx.amount if tx.status == ACCEPTED else 0
        report.pokdeng_totals[tx.player] = report.pokdeng_totals.get(tx.player, 0) + want
        if tx.status == ACCEPTED and (theirs.debit is None or theirs.debit.player != tx.player):
            differ(f"debit {tx.amount} accepted", platform)
        elif moved != want:
            differ(f"debit {tx.amount} {tx.status} (moves {want})", platform)
        elif tx.status == ROLLED_BACK and theirs.rollback is None and moved:
            differ(f"debit {tx.amount} rolled back", platform)
        return
    want = tx.amount if tx.status == APPLIED else 0
    report.pokdeng_totals[tx.player] = report.pokdeng_totals.get(tx.player, 0) + want
    if tx.status == REFUSED:
        differ(f"credit {tx.amount} refused by the platform: the player is owed it", platform)
    elif theirs.credit is None or theirs.credit.player != tx.player or moved != want:
        differ(f"credit {tx.amount} applied", platform)


__all__ = [
    "Difference",
    "Reconciliation",
    "RecordedRound",
    "Unfinished",
    "reconcile",
    "recorded_rounds",
    "recorded_transactions",
    "unfinished",
]
