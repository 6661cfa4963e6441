"""A stake with the platform's wallet: its debits first, then the bet (``RemotePort.before`` a stake).

The one pipeline (``application.pipeline.execute``) checks and authorises the command and answers a used
request id with its first answer, calling nobody; then it runs this step:

1. **Request** (``StakeStep.__call__``, in an attempt of the pipeline): the round is loaded and the core
   decides the stake as if funds were no limit (the platform's debit is the funds check); each debit the
   decision needs (the bettor's, and a player-banker's cover) is requested in the round's outbox, with its
   deterministic tx id. The pipeline saves the outbox before any call. A stake whose earlier debit is still
   open is refused (``Conflict``: retry the same request id; the recovery settles what a crash left open).
2. **Debit** (``StakeDebits.send``): each debit is sent, retried with its tx id until a definite answer or
   the attempts run out; unless the platform applied every one, the caller hears why
   (``InsufficientFunds``, ``NotFound``, ``WalletRefused``, ``WalletUnavailable``).
3. **Bet**: every debit applied, the pipeline records the command: the round records ``bet_placed`` and the
   outbox each debit's acceptance (``RemotePort.reserve`` finds the confirmed answer), with the request's
   record, in one transaction.
4. **Close** (``StakeDebits.close``): a stake that was not recorded (a refusal, no answer, or the bet no longer
   fits the round) has its debits finished: a refused one is recorded as refused, the others rolled back.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from eventsourcing.domain import Aggregate

from pokdeng_core import commands as rc
from pokdeng_core import events as re
from pokdeng_core import limits
from pokdeng_core.errors import InsufficientFunds
from pokdeng_core.machine import decide_and_fold
from pokdeng_core.round_state import RoundState
from pokdeng_service.application.attempt import Attempt
from pokdeng_service.application.errors import (
    Conflict,
    NotFound,
    WalletRefused,
    WalletSessionMissing,
    WalletSessionRejected,
    WalletUnavailable,
)
from pokdeng_service.application.round_commands import PlaceBet, PlaceSideBet
from pokdeng_service.store.vault import VaultError
from pokdeng_service.wallet.outbox import DEBIT_OPEN, Tx, WalletTransactions, debit_tx_id
from pokdeng_service.wallet.platform import Answer, PlatformWallet, SessionRejected, Unanswered
from pokdeng_service.wallet.sessions import PlayerSession

log = logging.getLogger("pokdeng.wallet")


class StakePort(Protocol):
    """What a stake needs of the remote port (``remote.RemotePort``): its platform, its outbox, its claims."""

    platform: PlatformWallet
    confirmed: dict[str, Any]
    stats: Counter[str]

    def claim(self, tx_ids: list[str]) -> bool: ...
    def unclaim(self, tx_ids: list[str]) -> None: ...
    def finish_soon(self, app: Any, round_id: str) -> None: ...
    def load(self, app: Any, round_id: str) -> WalletTransactions | None: ...
    def session_number(self, player: str, currency: str) -> int: ...
    def player_session(self, player: str, number: int) -> PlayerSession | None: ...
    def record(
        self, app: Any, round_id: str, change: Callable[[WalletTransactions], None]
    ) -> WalletTransactions | None: ...


@dataclass
class StakeDebits:
    """A stake's debits, requested in its round's outbox (``saved`` by the pipeline) and claimed by this thread."""

    port: StakePort
    app: Any
    request_id: str
    txs: WalletTransactions
    debits: list[Tx]
    answers: dict[str, Answer | None] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)  # tx id -> the platform's refusal of its session

    @property
    def saved(self) -> tuple[Aggregate, ...]:
        return (self.txs,)

    @property
    def ids(self) -> list[str]:
        return [tx.tx_id for tx in self.debits]

    def send(self) -> None:
        """Step 2: each debit sent until a definite answer; the refusal raised unless every one was applied."""
        for tx in self.debits:
            self.answers[tx.tx_id] = _debit(self.port, self.txs, tx, self.rejected)
        if not all(answer is not None and answer.applied for answer in self.answers.values()):
            raise _refusal(self.debits, self.answers, self.rejected)
        self.port.confirmed.update(self.answers)

    def close(self, recorded: bool) -> None:
        """Step 4: the debits of a stake that was not recorded finished; the claims let go."""
        for tx_id in self.ids:
            self.port.confirmed.pop(tx_id, None)
        if recorded:
            self.port.stats["stakes_placed"] += 1
        else:
            _finish(self.port, self.app, self.txs.round_id, self.debits, self.answers, self.request_id)
        self.port.unclaim(self.ids)
        if not recorded:
            self.port.finish_soon(self.app, self.txs.round_id)  # the rollbacks just requested

    def abandon(self) -> None:
        self.port.unclaim(self.ids)


@dataclass(frozen=True)
class StakeStep:
    """Step 1 of a stake on the platform's wallets, in an attempt of the pipeline (``pipeline._money_first``)."""

    port: StakePort

    def __call__(self, attempt: Attempt, command: PlaceBet | PlaceSideBet) -> StakeDebits | None:
        round_id = command.round_id
        record = attempt.round(round_id, sealed=True)
        txs = self.port.load(attempt.app, round_id)
        if txs is None and record.state.reserved:
            return None  # a round the internal wallets hold
        events, _after = decide_and_fold(record.state, _core(command, record.state))
        if txs is None:
            txs = WalletTransactions(round_id, record.table_id, record.state.currency)
        ids = []
        stakes = _stakes(events, record.state.banker_player)
        sessions = {payer: self.port.session_number(payer, txs.currency) for _p, _s, _b, payer, _a in stakes}
        for purpose, seat, bettor, payer, amount in stakes:
            earlier = txs.debits(purpose, seat, bettor)
            if any(tx.status == DEBIT_OPEN for tx in earlier):
                raise Conflict(
                    f"a debit of {bettor!r}'s stake on seat {seat} of round {round_id!r} is still open: "
                    "retry the same request id (it is finished by the platform's answer or rolled back)"
                )
            tx_id = debit_tx_id(round_id, purpose, seat, bettor, len(earlier))
            txs.request_debit(tx_id, payer, amount, purpose, seat, bettor, attempt.request_id, sessions[payer])
            ids.append(tx_id)
        if not self.port.claim(ids):
            raise Conflict(f"the stake's debits {ids} are being sent: retry the same request id")
        return StakeDebits(self.port, attempt.app, attempt.request_id, txs, [txs.txs[tx_id] for tx_id in ids])


def _core(command: PlaceBet | PlaceSideBet, state: RoundState) -> rc.RoundCommand:
    """The core command with funds no limit: the platform's debit decides whether the money is there."""
    most = limits.MAX_AMOUNT
    if isinstance(command, PlaceBet):
        banker = most if state.banker_player is not None else None
        return rc.PlaceBet(command.seat, command.player, command.stake, most, banker, command.client_seed)
    return rc.PlaceSideBet(command.seat, command.player, most)


def _stakes(events: tuple[re.RoundEvent, ...], banker: str | None) -> list[tuple[str, int, str, str, int]]:
    """The debits a stake's events need: (purpose, seat, bettor, payer, amount)."""
    out = []
    for event in events:
        if isinstance(event, re.BetPlaced):
            out.append(("bet", event.seat, event.player, event.player, event.reserved))
            if event.banker_reserved:
                assert banker is not None
                out.append(("cover", event.seat, event.player, banker, event.banker_reserved))
        elif isinstance(event, re.SideBetPlaced):
            out.append(("side", event.seat, event.player, event.player, event.reserved))
    return out


def _debit(port: StakePort, txs: WalletTransactions, tx: Tx, rejected: dict[str, str]) -> Answer | None:
    """One debit sent (with its payer's wallet session, if the platform takes one) until a definite answer; None if
    none came (``rejected``: the platform refused the session)."""
    try:
        session = port.player_session(tx.player, tx.session)
        answer = port.platform.debit(
            tx.tx_id, tx.player, txs.round_id, txs.table_id, tx.amount, txs.currency, tx.purpose, session=session
        )
    except SessionRejected as error:
        port.stats["debits_session_rejected"] += 1
        log.warning("wallet: debit %s: %s", tx.tx_id, error)
        rejected[tx.tx_id] = error.status
        return None
    except (WalletSessionMissing, VaultError) as error:  # (not sent: rolled back as an unanswered one)
        log.error("wallet: debit %s cannot be sent: %s", tx.tx_id, error)
        return None
    except Unanswered as error:
        port.stats["debits_unanswered"] += 1
        log.warning("wallet: debit %s unanswered: %s", tx.tx_id, error)
        return None
    port.stats["debits_" + ("applied" if answer.applied else "refused")] += 1
    return answer


def _finish(
    port: StakePort, app: Any, round_id: str, debits: list[Tx], answers: dict[str, Answer | None], request_id: str
) -> None:
    """The debits of a stake that is not placed: refused ones recorded, every other one to be rolled back."""

    def change(txs: WalletTransactions) -> None:
        for tx in debits:
            if txs.txs[tx.tx_id].status != DEBIT_OPEN:
                continue
            answer = answers.get(tx.tx_id)
            if answer is None:
                txs.request_rollback(tx.tx_id, "debit_unanswered", request_id)
            elif answer.applied:
                txs.request_rollback(tx.tx_id, "bet_not_placed", request_id)
            else:
                txs.refuse_debit(tx.tx_id, answer.status, answer.reason, request_id)

    try:
        port.record(app, round_id, change)
    except Exception:  # left open: the recovery rolls it back once it is older than the grace
        log.exception("wallet: the outcome of the debits %s could not be recorded", [tx.tx_id for tx in debits])


def _refusal(debits: list[Tx], answers: dict[str, Answer | None], rejected: dict[str, str]) -> Exception:
    """Why the stake was not placed (the pipeline tells a player no other wallet's funds)."""
    for tx in debits:
        answer = answers.get(tx.tx_id)
        if answer is None or answer.applied:
            continue
        if answer.status == "insufficient_funds":
            return InsufficientFunds(
                f"wallet {tx.player!r} cannot cover {tx.amount}: the platform holds {answer.balance}",
                required=tx.amount,
                available=answer.balance,
                wallet=tx.player,
            )
        if answer.status == "unknown_player":
            return NotFound(f"wallet {tx.player!r} not found (the platform has no such player)", wallet=tx.player)
        return WalletRefused(f"the platform refused debit {tx.tx_id}: {answer.reason or answer.status}", tx_id=tx.tx_id)
    for tx in debits:
        if tx.tx_id in rejected:
            return WalletSessionRejected(
                f"the platform refuses {tx.player!r}'s wallet session ({rejected[tx.tx_id]}): the debit is rolled "
                "back; launch the game again, hand pokdeng the new session (WalletService/OpenWalletSession), then "
                "retry",
                player=tx.player,
                status=rejected[tx.tx_id],
            )
    return WalletUnavailable(
        "the platform's wallet did not answer the stake's debit; it is rolled back: retry the command",
        tx_id=debits[0].tx_id if debits else "",
    )
