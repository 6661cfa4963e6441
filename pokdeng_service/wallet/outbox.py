"""A round's transactions with the platform's wallet: the outbox, one hash-chained stream per round.

``WalletTransactions`` (stream ``uuid5("wallet-tx:<round id>")``, beside the round in the round's
store) records every transaction pokdeng means to make with the platform *before* it calls the
platform, and then what became of it. A debit is recorded as requested in its own transaction
before the call (never a debit without a record); it is accepted in the very transaction that
records the round's ``bet_placed`` (or ``side_bet_placed``); a settlement's credits and a void's
rollbacks are requested in the transaction that settles or voids the round, and done afterwards.
Whatever is requested and not done is *pending*: the recovery (``wallet.recovery``) finishes it,
also after a crash (docs/wallet.md).

Facts (``kind``: ``data``), each on the chain like a round's (``codec.chain_digest``, genesis
``wallet-tx:<round id>``):

* ``debit_requested``: tx_id, player, amount, purpose (bet, cover, side), seat, bettor, request_id, and under
  ``--wallet hub88`` session (the number of the payer's wallet session it is sent with: ``store.sessions``)
* ``debit_accepted``: tx_id, balance, platform_ref (the bet is placed in the same transaction)
* ``debit_refused``: tx_id, status, reason (a definite refusal: no money moved)
* ``rollback_requested``: tx_id, reason (round_voided, bet_not_placed, debit_unanswered, recovered)
* ``debit_rolled_back``: tx_id, debited (whether money had been taken), balance
* ``credit_requested``: tx_id, player, amount, debits (with the round's ``round_settled``), and under
  ``--wallet hub88`` session (its first debit's: a win is sent with the session its bet was)
* ``credit_applied``: tx_id, balance, platform_ref
* ``credit_refused``: tx_id, status, reason (the player is owed it until an operator resolves it)
* ``rollback_refused``: tx_id, status, reason (the platform's first refusal of a rollback: the debit's money
  is owed to the player while it lasts; the rollback stays pending and is sent again)
* ``tx_resolved``: tx_id, reason, operator (``pokdeng wallet resolve``: an operator settled the transaction
  outside the protocol, say a manual credit on the platform; nothing is sent for it any more)

A transaction is **owed** (``owed``) while a player is owed its money and no call of pokdeng will pay it
by itself: a credit refused, a rollback refused, or a credit unanswered for longer than ``OWED_AFTER``
seconds, none of them resolved. ``pokdeng wallet pending`` lists it, ``pokdeng verify`` fails on it,
``pokdeng_wallet_owed_minor_units`` counts it (docs/wallet.md, "Money owed").

``step`` is the one fold of these facts (the aggregate, the verification and the reconciliation
use it); it refuses a fact that does not follow from the ones before (``ValueError``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, cast

from eventsourcing.domain import Aggregate, event

from pokdeng_service.store.aggregates import ChainedStream, transactions_uuid
from pokdeng_service.store.codec import genesis_digest
from pokdeng_service.store.integrity import StreamIntegrityError, fact_problem

STREAM = "WalletTransactions"
"""The stream kind of the outbox in the notification log (its class name)."""

PURPOSES = ("bet", "cover", "side")
DEBIT_OPEN = "requested"  # sent (or about to be), no definite answer recorded
ACCEPTED, REFUSED, ROLLING_BACK, ROLLED_BACK = "accepted", "refused", "rollback_requested", "rolled_back"
APPLIED = "applied"  # a credit's success
OWED_AFTER = 900.0
"""Seconds a credit may stay unanswered before its money counts as owed (the platform long failing it)."""


def debit_tx_id(round_id: str, purpose: str, seat: int, bettor: str, attempt: int) -> str:
    """The debit of one stake: ``<round>:<purpose>:<seat>:<bettor>:<n>``, ``n`` the earlier attempts of it."""
    return f"{round_id}:{purpose}:{seat}:{bettor}:{attempt}"


def credit_tx_id(round_id: str, player: str) -> str:
    """The round's one credit of a player: ``<round>:credit:<player>``."""
    return f"{round_id}:credit:{player}"


@dataclass(frozen=True, slots=True)
class Tx:
    """One transaction as the outbox knows it: a debit (``purpose`` bet/cover/side) or a credit."""

    tx_id: str
    kind: str  # "debit" or "credit"
    player: str
    amount: int
    status: str  # debit: requested, accepted, refused, rollback_requested, rolled_back; credit: requested, applied,
    # refused
    requested_at: str  # the time of its request fact (ISO 8601)
    purpose: str = "credit"
    seat: int = 0
    bettor: str = ""
    request_id: str = ""
    debits: tuple[str, ...] = ()  # a credit: the debits it settles
    reason: str = ""  # a refusal's or rollback's reason
    debited: bool | None = None  # a rollback: whether the debit had taken money
    accepted: bool = False  # a debit: whether its bet was placed (it may be rolled back since, by a void)
    refusal: str = ""  # a rollback: the platform's refusal of it (it stays pending, and owed)
    resolved: str = ""  # the operator's recorded reason (``tx_resolved``): finished outside the protocol
    resolved_by: str = ""
    session: int = 0  # the number of the player's wallet session it is sent with (0: none, ``--wallet remote``)

    @property
    def pending(self) -> bool:
        """Whether something is still to be done with the platform."""
        return self.status in (DEBIT_OPEN, ROLLING_BACK) and not self.resolved

    def owed(self, now: datetime | None = None, after: float = OWED_AFTER) -> str:
        """Why the player is owed this transaction's money and no call will pay it by itself ("" if it is not):
        a credit refused, a rollback refused, a credit unanswered for ``after`` seconds (at ``now``); never once
        resolved."""
        if self.resolved:
            return ""
        if self.kind == "credit" and self.status == REFUSED:
            return f"credit refused by the platform ({self.reason or 'no reason given'})"
        if self.kind == "debit" and self.status == ROLLING_BACK and self.refusal:
            return f"rollback refused by the platform ({self.refusal})"
        if self.kind == "credit" and self.status == DEBIT_OPEN and self.requested_at:
            moment = now or datetime.now(tz=UTC)
            age = (moment - datetime.fromisoformat(self.requested_at)).total_seconds()
            if age >= after:
                return f"credit unanswered for {int(age)} s"
        return ""

    @property
    def stake(self) -> tuple[str, int, str]:
        return (self.purpose, self.seat, self.bettor)


def step(txs: Mapping[str, Tx], kind: str, data: Mapping[str, Any], timestamp: str) -> dict[str, Tx]:
    """The transactions after one fact (a new dict; ``ValueError`` if the fact does not follow)."""
    out = dict(txs)
    tx_id = data["tx_id"]
    if not isinstance(tx_id, str) or not tx_id:
        raise ValueError("a transaction id is text")
    found = out.get(tx_id)
    if kind in ("debit_requested", "credit_requested"):
        if found is not None:
            raise ValueError(f"transaction {tx_id} is requested a second time")
        out[tx_id] = _requested(out, tx_id, kind, data, timestamp)
        return out
    if found is None:
        raise ValueError(f"{kind} of transaction {tx_id}, never requested")
    move = _MOVES.get(kind)
    if move is None or not move[0](found):
        raise ValueError(f"{kind} does not follow: transaction {tx_id} is a {found.kind}, {found.status}")
    out[tx_id] = move[1](found, data)
    return out


def _requested(txs: Mapping[str, Tx], tx_id: str, kind: str, data: Mapping[str, Any], timestamp: str) -> Tx:
    """A transaction's request: a debit for a stake, or a credit settling accepted debits of its player."""
    amount = data["amount"]
    if type(amount) is not int or amount < 0:
        raise ValueError(f"transaction {tx_id} has no amount in minor units")
    if kind == "debit_requested":
        if data["purpose"] not in PURPOSES:
            raise ValueError(f"debit {tx_id} is for no stake ({data['purpose']!r})")
        return Tx(
            tx_id, "debit", data["player"], amount, DEBIT_OPEN, timestamp,
            data["purpose"], int(data["seat"]), data["bettor"], data.get("request_id", ""), session=_session(data),
        )  # fmt: skip
    debits = tuple(data["debits"])
    for debit in debits:
        owner = txs.get(debit)
        if owner is None or owner.kind != "debit" or owner.status != ACCEPTED or owner.player != data["player"]:
            raise ValueError(f"credit {tx_id} settles {debit}, which is no accepted debit of its player")
    return Tx(tx_id, "credit", data["player"], amount, DEBIT_OPEN, timestamp, debits=debits, session=_session(data))


def _of(kind: str, *statuses: str) -> Callable[[Tx], bool]:
    """Whether a transaction is a ``kind`` in one of ``statuses``."""
    return lambda tx: tx.kind == kind and tx.status in statuses


def _refusal(data: Mapping[str, Any]) -> str:
    return str(data.get("reason") or data.get("status", ""))


def _resolved(tx: Tx, data: Mapping[str, Any]) -> Tx:
    reason = data.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError(f"transaction {tx.tx_id} is resolved without a reason")
    return replace(tx, resolved=reason, resolved_by=str(data.get("operator", "")))


RESOLVABLE = frozenset({(REFUSED, "credit"), (DEBIT_OPEN, "credit"), (ROLLING_BACK, "debit"), (ACCEPTED, "debit")})
"""(status, kind) of the transactions an operator may resolve: a credit refused or unanswered, a rollback not done,
an accepted debit (stranded by a round closed without crediting or rolling it back)."""


_MOVES: dict[str, tuple[Callable[[Tx], bool], Callable[[Tx, Mapping[str, Any]], Tx]]] = {
    "debit_accepted": (_of("debit", DEBIT_OPEN), lambda tx, _data: replace(tx, status=ACCEPTED, accepted=True)),
    "debit_refused": (_of("debit", DEBIT_OPEN), lambda tx, data: replace(tx, status=REFUSED, reason=_refusal(data))),
    "rollback_requested": (
        _of("debit", DEBIT_OPEN, ACCEPTED),
        lambda tx, data: replace(tx, status=ROLLING_BACK, reason=str(data["reason"])),
    ),
    "debit_rolled_back": (
        _of("debit", ROLLING_BACK),
        lambda tx, data: replace(tx, status=ROLLED_BACK, debited=bool(data["debited"])),
    ),
    "credit_applied": (_of("credit", DEBIT_OPEN), lambda tx, _data: replace(tx, status=APPLIED)),
    "credit_refused": (_of("credit", DEBIT_OPEN), lambda tx, data: replace(tx, status=REFUSED, reason=_refusal(data))),
    "rollback_refused": (
        lambda tx: tx.kind == "debit" and tx.status == ROLLING_BACK and not tx.refusal,
        lambda tx, data: replace(tx, refusal=str(data.get("reason") or data.get("status") or "refused")),
    ),
    "tx_resolved": (lambda tx: not tx.resolved and (tx.status, tx.kind) in RESOLVABLE, _resolved),
}
"""Each fact that moves a requested transaction on: which transactions it may follow, and the transaction after it."""


def _session(data: Mapping[str, Any]) -> int:
    """A request's wallet session number (0: none recorded)."""
    session = data.get("session", 0)
    if type(session) is not int or session < 0:
        raise ValueError(f"transaction {data['tx_id']} names no wallet session by its number ({session!r})")
    return session


def closing_tx(txs: Mapping[str, Tx]) -> str | None:
    """The round's last transaction by its record (protocol v2's ``round_closed``): the last credit of its
    settlement, else the last rollback of its void (of the accepted debits, in the order they were requested);
    None while the round has neither."""
    credits = [t.tx_id for t in txs.values() if t.kind == "credit"]
    if credits:
        return credits[-1]
    voided = [
        t.tx_id for t in txs.values()
        if t.kind == "debit" and t.accepted and t.reason == "round_voided" and t.status in (ROLLING_BACK, ROLLED_BACK)
    ]  # fmt: skip
    return voided[-1] if voided else None


def fold(facts: Iterable[tuple[str, Mapping[str, Any], str]]) -> dict[str, Tx]:
    """The transactions of a stream's facts ``(kind, data, timestamp)``, in order."""
    txs: dict[str, Tx] = {}
    for kind, data, timestamp in facts:
        txs = step(txs, kind, data, timestamp)
    return txs


KINDS = (
    "debit_requested",
    "debit_accepted",
    "debit_refused",
    "rollback_requested",
    "debit_rolled_back",
    "credit_requested",
    "credit_applied",
    "credit_refused",
    "rollback_refused",
    "tx_resolved",
)


class WalletTransactions(ChainedStream):
    """The outbox of one round: every transaction with the platform's wallet, requested and done."""

    round_id: str
    table_id: str
    currency: str
    txs: dict[str, Tx]

    class Opened(Aggregate.Created):
        round_id: str
        table_id: str
        currency: str

    @staticmethod
    def create_id(round_id: str, table_id: str, currency: str) -> uuid.UUID:
        return transactions_uuid(round_id)

    @event(Opened)
    def __init__(self, round_id: str, table_id: str, currency: str) -> None:
        self.round_id = round_id
        self.table_id = table_id
        self.currency = currency
        self.stream_id = round_id
        self.last_digest = genesis_digest(f"wallet-tx:{round_id}")
        self.txs = {}

    def apply_fact(self, fact: ChainedStream.Fact) -> None:
        super().apply_fact(fact)
        self.txs = step(self.txs, fact.kind, fact.data, fact.timestamp.isoformat())

    def _fact(self, kind: str, data: dict[str, Any], command_id: str) -> None:
        self.record_fact(FACTS[kind], kind, data, command_id)

    # -- what is known ---------------------------------------------------------------------

    def debits(self, purpose: str, seat: int, bettor: str) -> list[Tx]:
        """The debits of one stake, oldest first."""
        return [t for t in self.txs.values() if t.kind == "debit" and t.stake == (purpose, seat, bettor)]

    def accepted(self, player: str) -> list[Tx]:
        """The player's debits whose bets were placed and are not rolled back (what its reservation holds)."""
        return [t for t in self.txs.values() if t.kind == "debit" and t.player == player and t.status == ACCEPTED]

    def pending(self) -> list[Tx]:
        """Transactions still to be done with the platform: open debits, rollbacks and credits."""
        return [t for t in self.txs.values() if t.pending]

    # -- facts -------------------------------------------------------------------------------

    def request_debit(
        self, tx_id: str, player: str, amount: int, purpose: str, seat: int, bettor: str, request_id: str,
        session: int = 0,
    ) -> None:  # fmt: skip
        data: dict[str, Any] = {"tx_id": tx_id, "player": player, "amount": amount, "purpose": purpose, "seat": seat}
        data.update(bettor=bettor, request_id=request_id, **({"session": session} if session else {}))
        self._fact("debit_requested", data, request_id)

    def accept_debit(self, tx_id: str, balance: int, platform_ref: str, command_id: str) -> None:
        self._fact("debit_accepted", {"tx_id": tx_id, "balance": balance, "platform_ref": platform_ref}, command_id)

    def refuse_debit(self, tx_id: str, status: str, reason: str, command_id: str) -> None:
        self._fact("debit_refused", {"tx_id": tx_id, "status": status, "reason": reason}, command_id)

    def request_rollback(self, tx_id: str, reason: str, command_id: str) -> None:
        self._fact("rollback_requested", {"tx_id": tx_id, "reason": reason}, command_id)

    def record_rollback(self, tx_id: str, debited: bool, balance: int, command_id: str) -> None:
        self._fact("debit_rolled_back", {"tx_id": tx_id, "debited": debited, "balance": balance}, command_id)

    def request_credit(
        self, tx_id: str, player: str, amount: int, debits: list[str], command_id: str, session: int = 0
    ) -> None:
        data = {"tx_id": tx_id, "player": player, "amount": amount, "debits": debits}
        self._fact("credit_requested", {**data, "session": session} if session else data, command_id)

    def apply_credit(self, tx_id: str, balance: int, platform_ref: str, command_id: str) -> None:
        self._fact("credit_applied", {"tx_id": tx_id, "balance": balance, "platform_ref": platform_ref}, command_id)

    def refuse_credit(self, tx_id: str, status: str, reason: str, command_id: str) -> None:
        self._fact("credit_refused", {"tx_id": tx_id, "status": status, "reason": reason}, command_id)

    def refuse_rollback(self, tx_id: str, status: str, reason: str, command_id: str) -> None:
        self._fact("rollback_refused", {"tx_id": tx_id, "status": status, "reason": reason}, command_id)

    def resolve(self, tx_id: str, reason: str, operator: str, command_id: str) -> None:
        self._fact("tx_resolved", {"tx_id": tx_id, "reason": reason, "operator": operator}, command_id)

    def owed(self, now: datetime | None = None, after: float = OWED_AFTER) -> list[Tx]:
        """The transactions whose money a player is owed (``Tx.owed``)."""
        return [t for t in self.txs.values() if t.owed(now, after)]


def _fact_class(name: str) -> type[ChainedStream.Fact]:
    attrs = {"__qualname__": f"WalletTransactions.{name}", "__module__": __name__}
    sub = type(name, (WalletTransactions.Fact,), attrs)
    setattr(WalletTransactions, name, sub)
    return cast(type[ChainedStream.Fact], sub)


FACTS: dict[str, type[ChainedStream.Fact]] = {
    kind: _fact_class("".join(part.title() for part in kind.split("_"))) for kind in KINDS
}
"""The stored class of each fact kind (``WalletTransactions.DebitRequested``, ...): their topics read well."""


def load_transactions(app: Any, round_id: str) -> WalletTransactions | None:
    """The round's outbox read afresh from the store (never cached: every process that touches it reads
    the truth), its identity and chain checked; None if the round has none. A stream that is not what
    it claims raises ``StreamIntegrityError``."""
    stream_uuid = transactions_uuid(round_id)
    aggregate: Any = None
    for domain_event in app.events.get(stream_uuid):
        if aggregate is not None:
            problem = fact_problem(aggregate, domain_event) if isinstance(domain_event, ChainedStream.Fact) else None
            if problem is not None or not isinstance(domain_event, ChainedStream.Fact):
                problem = problem or f"event {domain_event.originator_version} is not a transaction fact"
                raise StreamIntegrityError(STREAM, round_id, stream_uuid, problem)
        aggregate = domain_event.mutate(aggregate)
        if not isinstance(aggregate, WalletTransactions) or aggregate.round_id != round_id:
            raise StreamIntegrityError(STREAM, round_id, stream_uuid, "it is not this round's transactions")
    return cast(WalletTransactions | None, aggregate)


__all__ = [
    "ACCEPTED",
    "APPLIED",
    "DEBIT_OPEN",
    "FACTS",
    "KINDS",
    "OWED_AFTER",
    "REFUSED",
    "RESOLVABLE",
    "ROLLED_BACK",
    "ROLLING_BACK",
    "STREAM",
    "Tx",
    "WalletTransactions",
    "closing_tx",
    "credit_tx_id",
    "debit_tx_id",
    "fold",
    "load_transactions",
    "step",
    "transactions_uuid",
]
