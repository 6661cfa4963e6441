"""The rounds' transactions with the platform's wallet, verified (``pokdeng verify --all``, ``pokdeng verify ROUND``).

Whole-store verification (``audit.store``) hands every row of a ``WalletTransactions`` stream to
``PlatformAudit.row`` as it reads the log: the creation names a round whose outbox uuid the stream
has; every fact carries its digest on the stream's chain (genesis ``wallet-tx:<round id>``) and
follows from the facts before it (``outbox.step``). At the end (``PlatformAudit.verdicts``) each
outbox is checked against its round's own record (``check_round``):

* every player's placed stakes (what the round reserves for it, a player-banker's covers
  included) are exactly its accepted debits: no bet played without its debit, no debit accepted
  without a bet;
* a settled round requests one credit per player of its reservation plus its net, settling exactly
  those debits, and nothing else; a voided round rolls back every accepted debit, and credits
  nothing; an open round credits nothing.

A transaction whose money a player is owed (``outbox.Tx.owed``: a credit or a rollback the platform
refused, a credit unanswered for ``OWED_AFTER`` seconds) fails its round's check and the
``platform transactions`` verdict until it is done or an operator resolves it with a recorded reason
(``pokdeng wallet resolve TX_ID --reason TEXT``): money owed is never seen as a pass.

Such a round's money is the platform's: the round's verdict gets a ``platform wallet`` check, and
the store's own wallets are not asked for it. One more verdict, ``platform transactions``, sums up
the streams (and the transactions still pending, which the recovery finishes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from pokdeng_core import events as re
from pokdeng_core.currencies import DEFAULT, currency_of
from pokdeng_service.audit.platform_txs import round_money
from pokdeng_service.audit.verdicts import Verdict
from pokdeng_service.money import format_money
from pokdeng_service.store.codec import genesis_digest
from pokdeng_service.store.facts import Recorded, RecordedEvent
from pokdeng_service.wallet.outbox import (
    ACCEPTED,
    APPLIED,
    ROLLED_BACK,
    ROLLING_BACK,
    STREAM,
    Tx,
    step,
    transactions_uuid,
)


def check_round(
    txs: Mapping[str, Tx],
    outcome: str,
    reserved: Mapping[str, int],
    nets: Mapping[str, int],
    currency: str = DEFAULT,
) -> str:
    """What is wrong between a round's transactions and its record ("" if nothing): ``outcome`` settled,
    voided or "" (open); ``reserved`` what the round reserves per player; ``nets`` its settlement's nets;
    the amounts said in the round's ``currency``."""
    placed: dict[str, int] = {}
    credits: dict[str, Tx] = {}
    for tx in txs.values():
        if tx.kind == "debit" and tx.accepted:
            placed[tx.player] = placed.get(tx.player, 0) + tx.amount
        elif tx.kind == "credit":
            credits[tx.player] = tx
    wanted = {p: a for p, a in reserved.items() if a}
    if placed != wanted:
        have, stakes = _amounts(placed, currency), _amounts(wanted, currency)
        return f"the accepted debits {have} are not the round's stakes {stakes}"
    if outcome == "settled":
        for player, held in wanted.items():
            credit = credits.pop(player, None)
            debits = sorted(t.tx_id for t in txs.values() if t.kind == "debit" and t.accepted and t.player == player)
            want = held + nets.get(player, 0)
            if credit is None:
                return f"no credit of {format_money(want, currency)} to {player} (the round settles it)"
            if credit.amount != want or sorted(credit.debits) != debits:
                return (
                    f"the credit to {player} is {format_money(credit.amount, currency)} for {list(credit.debits)}; "
                    f"the round pays {format_money(want, currency)}"
                )
        if credits:
            return f"credits to {sorted(credits)}, whom the round does not pay"
        return ""
    if credits:
        return f"credits to {sorted(credits)} in a round that is {outcome or 'open'}"
    if outcome == "voided":
        kept = [t.tx_id for t in txs.values() if t.kind == "debit" and t.accepted and t.status not in _UNDONE]
        if kept:
            return f"the void leaves debits {kept} in force"
    elif any(t.kind == "debit" and t.status in _UNDONE and t.accepted for t in txs.values()):
        return "a placed stake is rolled back in a round that is not voided"
    return ""


_UNDONE = (ROLLING_BACK, ROLLED_BACK)


def owed_problem(txs: Mapping[str, Tx], now: datetime | None = None, currency: str = DEFAULT) -> str:
    """The transactions whose money a player is owed, as a check's problem ("" if none)."""
    owed = [(t, t.owed(now)) for t in txs.values() if t.owed(now)]
    if not owed:
        return ""
    listed = "; ".join(f"{t.tx_id}: {format_money(t.amount, currency)} to {t.player}, {why}" for t, why in owed)
    return f"{len(owed)} owed to players ({listed}): pay it, or record it with pokdeng wallet resolve TX_ID --reason"


def summary(txs: Mapping[str, Tx], currency: str = DEFAULT) -> str:
    debits = sum(t.amount for t in txs.values() if t.kind == "debit" and t.accepted)
    credits = sum(t.amount for t in txs.values() if t.kind == "credit")
    return f"debits {format_money(debits, currency)}, credits {format_money(credits, currency)}, as the round says"


def _amounts(per_player: Mapping[str, int], currency: str) -> str:
    """``{alice: THB 5.00, bob: THB 10.00}``: amounts per player, in their order by name."""
    return "{" + ", ".join(f"{p}: {format_money(a, currency)}" for p, a in sorted(per_player.items())) + "}"


def round_record(facts: Iterable[Recorded]) -> tuple[str, dict[str, int], dict[str, int]]:
    """(outcome, reserved per player, nets) of a round from its facts (``verify ROUND``; ``platform_txs.round_money``,
    which a bundle's check reads too)."""
    return round_money(facts)


def verify_platform_round(app: Any, verdict: Verdict, round_id: str, facts: Sequence[Recorded]) -> bool:
    """A round's transactions against its facts (``audit.live.verify_round`` with wallets): whether the
    round's money is the platform's (then its verdict has the ``platform wallet`` check)."""
    from pokdeng_service.store.integrity import StreamIntegrityError
    from pokdeng_service.wallet.outbox import load_transactions

    try:
        txs = load_transactions(app, round_id)
    except StreamIntegrityError as error:
        verdict.add("platform wallet", False, f"its transactions stream is refused: {error.problem}")
        return True
    except (ValueError, KeyError, TypeError) as error:
        verdict.add("platform wallet", False, f"its transactions do not follow: {error}")
        return True
    if txs is None:
        return False
    outcome, reserved, nets = round_record(facts)
    opened = next((f.data for f in facts if f.kind == re.RoundOpened.kind), {})
    currency = currency_of(opened)
    problem = check_round(txs.txs, outcome, reserved, nets, currency) or owed_problem(txs.txs, currency=currency)
    verdict.add("platform wallet", not problem, problem or summary(txs.txs, currency))
    return True


@dataclass(eq=False)
class _Outbox:
    stream: Any  # the audit's ``StreamRead``
    txs: dict[str, Tx] = field(default_factory=dict)


class PlatformAudit:
    """The outbox streams of one store, as ``audit.store`` reads them (``row``), then checked (``verdicts``)."""

    def __init__(self) -> None:
        self.outboxes: dict[UUID, _Outbox] = {}
        self.problems: list[str] = []

    def row(self, audit: Any, stream: Any, fact: RecordedEvent) -> None:
        outbox = self.outboxes.get(stream.uuid)
        if outbox is None:
            outbox = self.outboxes[stream.uuid] = _Outbox(stream)
        if fact.kind == "Opened":
            ident = fact.data.get("round_id")
            if fact.position != 1:
                stream.fail("stream", fact.position, "a second creation row", fact.kind)
            elif type(ident) is not str or transactions_uuid(ident) != stream.uuid:
                stream.fail("stream", 1, f"its creation names round {ident!r}, whose transactions are not this stream")
            else:
                stream.ident = ident
                stream.previous = genesis_digest(f"wallet-tx:{ident}")
            return
        if fact.position == 1:
            stream.fail("stream", 1, "where the stream's creation row belongs", fact.kind)
        if fact.data.get("tx_id") is not None and stream.ident and not str(fact.data["tx_id"]).startswith(stream.ident):
            stream.fail("stream", fact.position, f"transaction {fact.data['tx_id']} is not of round {stream.ident}")
        audit._chain(stream, fact)
        try:
            outbox.txs = step(outbox.txs, fact.kind, fact.data, fact.timestamp)
        except (KeyError, TypeError, ValueError) as error:
            stream.fail("stream", fact.position, f"does not follow: {error}", fact.kind)

    def verdicts(self, audit: Any) -> list[Verdict]:
        """The rounds' ``platform wallet`` checks and the ``platform transactions`` verdict; the rounds
        checked here are taken off the store's wallets' check (their money is the platform's)."""
        if not self.outboxes:
            return []
        problems: list[str] = []
        owed: list[str] = []
        pending = checked = 0
        for outbox in self.outboxes.values():
            stream = outbox.stream
            if stream.problems:
                check = next(iter(stream.problems))
                problems.append(f"{stream.label} {stream.problems[check]}")
            record = audit.rounds.get(stream.ident) if stream.ident else None
            if record is None:
                if stream.ident:
                    problems.append(f"{stream.label}: the store holds no round {stream.ident}")
                continue
            problem = check_round(outbox.txs, record.outcome if record.closed is not None else "", record.reserved,
                                  record.nets, record.currency)  # fmt: skip
            if stream.problems:
                problem = problem or f"its transactions stream fails verification ({next(iter(stream.problems))})"
            owes = owed_problem(outbox.txs, currency=record.currency)
            if owes:
                owed.append(f"{stream.label}: {owes}")
            problem = problem or owes
            if record.verdict is not None:
                record.verdict.add("platform wallet", not problem, problem or summary(outbox.txs, record.currency))
            if problem and not owes:
                problems.append(f"{stream.label}: {problem}")
            record.reserved, record.nets = {}, {}  # (the platform holds this round's money, not the store's wallets)
            checked += 1
            pending += sum(1 for tx in outbox.txs.values() if tx.pending)
        verdict = Verdict("platform transactions")
        streams = f"{len(self.outboxes)} streams, every row on its chain and following from the ones before"
        verdict.add("streams", not problems, problems[0] if problems else streams)
        settled = sum(1 for o in self.outboxes.values() for t in o.txs.values() if t.status in (ACCEPTED, APPLIED))
        verdict.add("rounds", not problems, f"{checked} rounds' debits and credits as the rounds say ({settled} done)")
        verdict.add("pending", True, f"{pending} transactions pending (the recovery finishes them)")
        owes = f"{len(owed)} rounds owe players money; the first, {owed[0]}" if owed else "no money owed to a player"
        verdict.add("owed", not owed, owes)
        return [verdict]


__all__ = [
    "STREAM",
    "PlatformAudit",
    "check_round",
    "owed_problem",
    "round_record",
    "summary",
    "verify_platform_round",
]
