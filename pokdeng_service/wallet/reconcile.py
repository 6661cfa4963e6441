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
* a credit the platform refused, a rollback it refused, and a credit unanswered for ``OWED_AFTER``
  seconds are differences: the player is owed the money (``outbox.Tx.owed``) until an operator
  resolves the transaction (``tx_resolved``); a resolved transaction is listed apart, with its reason
  (and is a difference only if the platform moved money for it after all);
* a transaction of the platform that pokdeng has no record of, in a round of one of pokdeng's
  tables, is a difference (a debit without a record must never happen); one of a round of no table
  of pokdeng's (another game's, a manual credit, ...) is *not ours*: listed apart, not a difference.

Each side's totals per player are built from that side's own record: pokdeng's from its outboxes
(the transactions requested in the period: an accepted debit not rolled back takes its amount, an
applied credit gives its own), the platform's from its ``ListTransactions`` rows recorded in the
period (transactions not ours apart); every player of either side is reported with both, in each
currency its transactions were in.

Amounts: the text (``render``) says money in its currency (``pokdeng_service.money.format_money``: the
round's currency, the table's, for pokdeng's transactions; the row's for the platform's); the JSON
(``as_dict``) keeps integer minor units (a difference's ``amount`` and ``currency``; the totals).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from eventsourcing.utils import get_topic

from pokdeng_core.currencies import DEFAULT, currency_of
from pokdeng_service.money import format_money
from pokdeng_service.store import fastpaths
from pokdeng_service.wallet.outbox import (
    ACCEPTED,
    APPLIED,
    FACTS,
    REFUSED,
    ROLLED_BACK,
    ROLLING_BACK,
    Tx,
    WalletTransactions,
    step,
)
from pokdeng_service.wallet.reconciliation import Difference, Reconciliation, add_moved
from pokdeng_service.wallet.v1 import wallet_pb2 as pb

PAGE = 1000
TOPICS = (get_topic(WalletTransactions.Opened), *(get_topic(cls) for cls in FACTS.values()))
"""The stored topics of the outboxes' rows: the only rows of the log read."""


@dataclass
class _Ours:
    tx: Tx
    round_id: str
    currency: str = DEFAULT


@dataclass
class RecordedRound:
    """One round's outbox as pokdeng's record folds it, and the partition (application) that holds it."""

    app: Any
    round_id: str
    txs: dict[str, Tx]
    currency: str = DEFAULT  # the round's (its table's): every transaction's

    def held(self) -> list[Tx]:
        """The debits whose stakes the round still holds: accepted (the bet placed), neither settled by a credit
        nor rolled back. An open round holds every accepted debit until its settlement (one credit per player,
        naming its debits) or its void (their rollbacks); a closed round holds none."""
        settled = {d for t in self.txs.values() if t.kind == "credit" for d in t.debits}
        return [
            t for t in self.txs.values()
            if t.kind == "debit" and t.status == ACCEPTED and t.tx_id not in settled and not t.resolved
        ]  # fmt: skip

    def pending(self, now: datetime | None = None) -> list[Tx]:
        """Requested and not answered (and not owed: ``owed``)."""
        return [t for t in self.txs.values() if t.pending and not t.owed(now)]

    def owed(self, now: datetime | None = None) -> list[Tx]:
        return [t for t in self.txs.values() if t.owed(now)]

    def closed(self) -> bool:
        """Whether the round is closed (settled or voided), as its own stream says (a round the store does not
        hold is not open)."""
        from pokdeng_core.round_state import Phase
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
                    currency = currency_of(fact.data)
                    by_stream[note.originator_id] = RecordedRound(app, str(fact.data["round_id"]), {}, currency)
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
            out[tx.tx_id] = _Ours(tx, found.round_id, found.currency)
    return out


@dataclass(frozen=True)
class Unfinished:
    """A transaction with the platform that pokdeng has not finished, and what finishes it (``state``):

    * ``pending``: a debit, rollback or credit requested and not answered: the recovery of a server on
      ``--wallet remote`` sends it until the platform answers;
    * ``held``: a debit accepted by an open round (its stake in play): the round's settlement credits it,
      its void rolls it back, both only on a server on ``--wallet remote``;
    * ``stranded``: a debit accepted by a round that is closed and neither credited nor rolled it back (a
      round settled or voided outside the platform's wallet: no server finishes it; an operator must);
    * ``owed``: a credit or a rollback the platform refused, or a credit unanswered for ``OWED_AFTER`` seconds:
      the player is owed its money (a server keeps sending a rollback or an unanswered credit, but only the
      platform's operators can mend a refusal) until it is done or resolved (``pokdeng wallet resolve``)."""

    tx: Tx
    round_id: str
    state: str
    why: str = ""  # an owed transaction: why the player is owed it
    currency: str = DEFAULT  # the round's: ``tx.amount`` is in its minor units

    def as_dict(self) -> dict[str, Any]:
        """For a machine: ``amount`` in minor units of ``currency``."""
        tx = self.tx
        return {
            "tx_id": tx.tx_id, "round_id": self.round_id, "player": tx.player, "amount": tx.amount,
            "currency": self.currency, "kind": tx.kind, "status": tx.status, "requested_at": tx.requested_at,
            "state": self.state, "why": self.why,
        }  # fmt: skip

    def render(self) -> str:
        tx = self.tx
        what = {
            "pending": f"{tx.status}",
            "held": f"held by open round {self.round_id} (its settlement or void on --wallet remote finishes it)",
            "stranded": f"STRANDED: round {self.round_id} is closed and neither credited nor rolled it back",
            "owed": f"OWED to {tx.player}: {self.why} (round {self.round_id})",
        }[self.state]
        return f"{tx.tx_id}: {tx.kind} of {format_money(tx.amount, self.currency)} ({tx.player}) {what}"


def unfinished(rounds: Iterable[RecordedRound], now: datetime | None = None) -> list[Unfinished]:
    """What pokdeng's record has not finished with the platform (``Unfinished``), round by round."""
    out: list[Unfinished] = []
    moment = now or datetime.now(tz=UTC)
    for found in rounds:
        currency = found.currency
        out += [Unfinished(tx, found.round_id, "owed", tx.owed(moment), currency) for tx in found.owed(moment)]
        out += [Unfinished(tx, found.round_id, "pending", "", currency) for tx in found.pending(moment)]
        held = found.held()
        if held:
            state = "stranded" if found.closed() else "held"
            out += [Unfinished(tx, found.round_id, state, "", currency) for tx in held]
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


def _table(round_id: str) -> str:
    return round_id.rpartition("#")[0]


def reconcile(
    apps: Iterable[Any], platform: Any, since: datetime, until: datetime, margin: float = 300.0,
    now: datetime | None = None,
) -> Reconciliation:  # fmt: skip
    """Compare pokdeng's record with the platform's (``PlatformWallet.transactions``) for ``[since, until)``."""
    period = (int(since.timestamp() * 1000), int(until.timestamp() * 1000))
    moment = now or datetime.now(tz=UTC)
    report = Reconciliation(since.isoformat(), until.isoformat())
    rounds = recorded_rounds(apps)
    ours = recorded_transactions(apps, rounds)
    wide = platform.transactions(max(0, period[0] - int(margin * 1000)), period[1] + int(margin * 1000))
    theirs = platform_transactions(wide)
    for tx_id, entry in sorted(ours.items()):
        if not period[0] <= _ms(entry.tx.requested_at) < period[1]:
            continue
        report.compared += 1
        _compare(report, entry, theirs.get(tx_id, _Theirs()), moment)
    tables = {_table(r.round_id) for r in rounds} - {""}
    _platform_side(report, theirs, ours, tables, period)
    _held_side(report, rounds, moment, period)
    return report


def _platform_side(
    report: Reconciliation,
    theirs: dict[str, _Theirs],
    ours: dict[str, _Ours],
    tables: set[str],
    period: tuple[int, int],
) -> None:
    """The platform's totals, from its own record of the period, and its transactions pokdeng has no record of: a
    difference in a round of one of pokdeng's tables, else not ours."""
    since_ms, until_ms = period
    for tx_id, found in sorted(theirs.items()):
        rows = [r for r in (found.debit, found.credit, found.rollback) if r is not None]
        first = found.first
        mine = tx_id in ours or first.round_id in ours or _table(first.round_id) in tables
        totals = report.platform_moved if mine else report.not_ours_moved
        for row in rows:
            if since_ms <= row.recorded_unix_ms < until_ms:
                add_moved(totals, row.player, row.currency or DEFAULT, _row_moved(row))
        if tx_id in ours or not since_ms <= first.recorded_unix_ms < until_ms:
            continue
        moved, currency = _moved(found), first.currency or DEFAULT
        what = "moved nothing"
        if moved:
            what = f"{'debited' if found.debit is not None else 'credited'} {format_money(abs(moved), currency)}"
        says = "has no record of it" if mine else "not ours"
        listed = Difference(tx_id, first.player, first.round_id, says, what, int(first.amount), currency)
        if mine:
            report.compared += 1
            report.differences.append(listed)
        else:
            report.not_ours.append(listed)


def _held_side(report: Reconciliation, rounds: list[RecordedRound], moment: datetime, period: tuple[int, int]) -> None:
    """The period's debits still held: by an open round (held), or by a closed one (stranded: a difference)."""
    for item in unfinished(rounds, moment):
        tx = item.tx
        if item.state not in ("held", "stranded") or not period[0] <= _ms(tx.requested_at) < period[1]:
            continue
        debit = f"debit {format_money(tx.amount, item.currency)} accepted"
        if item.state == "held":
            says = f"{debit}, its round open (its settlement or void finishes it)"
            report.held.append(
                Difference(tx.tx_id, tx.player, item.round_id, says, "holds it", tx.amount, item.currency)
            )
        else:
            says = (
                f"{debit}; its round is closed and neither credited nor rolled it back (settled outside the "
                "platform's wallet): the player is owed it"
            )
            listed = Difference(tx.tx_id, tx.player, item.round_id, says, "holds it", tx.amount, item.currency)
            report.differences.append(listed)


def _row_moved(row: Any) -> int:
    """What one row of the platform's record moved for its player (credits +, debits -)."""
    if row.kind == pb.TRANSACTION_KIND_DEBIT:
        return -row.amount if row.status == pb.TRANSACTION_STATUS_APPLIED else 0
    if row.kind == pb.TRANSACTION_KIND_ROLLBACK:
        return int(row.amount)
    return int(row.amount) if row.status == pb.TRANSACTION_STATUS_APPLIED else 0


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


def _ours_moved(tx: Tx) -> int:
    """What pokdeng's own record says one transaction moved for its player: an accepted debit not rolled back
    (a rollback not done yet included) takes its amount, an applied credit gives its own."""
    if tx.kind == "debit":
        return -tx.amount if tx.status == ACCEPTED or (tx.status == ROLLING_BACK and tx.accepted) else 0
    return tx.amount if tx.status == APPLIED else 0


def _compare(report: Reconciliation, ours: _Ours, theirs: _Theirs, now: datetime) -> None:
    tx, currency = ours.tx, ours.currency
    moved = _moved(theirs)
    add_moved(report.pokdeng_moved, tx.player, currency, _ours_moved(tx))

    def money(amount: int) -> str:
        return format_money(amount, currency)

    def differ(pokdeng: str, platform: str) -> None:
        report.differences.append(
            Difference(tx.tx_id, tx.player, ours.round_id, pokdeng, platform, tx.amount, currency)
        )

    platform = f"moved {money(moved)}" if theirs.first is not None else "has no record of it"
    owed = tx.owed(now)
    what = f"{tx.kind} {money(tx.amount)}"
    if tx.resolved:
        says = f"{what} {tx.status}, resolved by {tx.resolved_by or 'an operator'}: {tx.resolved}"
        paid = tx.kind == "credit" and theirs.credit is not None and moved
        if paid:  # (paid by the platform after all: and maybe by the operator's hand too)
            differ(f"{says}; yet the platform applied the credit", platform)
        else:
            listed = Difference(tx.tx_id, tx.player, ours.round_id, says, platform, tx.amount, currency)
            report.resolved.append(listed)
        return
    if owed:
        differ(f"{what} {tx.status}: {owed}: the player is owed {money(tx.amount)}", platform)
        return
    if tx.pending:
        listed = Difference(tx.tx_id, tx.player, ours.round_id, f"{tx.kind} {tx.status}", platform, tx.amount, currency)
        report.pending.append(listed)
        return
    if tx.kind == "debit":
        want = -tx.amount if tx.status == ACCEPTED else 0
        if tx.status == ACCEPTED and (theirs.debit is None or theirs.debit.player != tx.player):
            differ(f"{what} accepted", platform)
        elif moved != want:
            differ(f"{what} {tx.status} (moves {money(want)})", platform)
        elif tx.status == ROLLED_BACK and theirs.rollback is None and moved:
            differ(f"{what} rolled back", platform)
        return
    want = tx.amount if tx.status == APPLIED else 0
    if tx.status == REFUSED:
        differ(f"{what} refused by the platform: the player is owed it", platform)
    elif theirs.credit is None or theirs.credit.player != tx.player or moved != want:
        differ(f"{what} applied", platform)


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
