"""A stake with the platform's wallet: its debits first, then the bet (``RemotePort.handle`` of a stake).

1. The command is checked and authorised as the pipeline does; a request id already answered
   returns its first answer (``replayed``) and calls nobody.
2. **Request**: the round is loaded and the core decides the stake as if funds were no limit (the
   platform's debit is the funds check); each debit the decision needs (the bettor's, and a
   player-banker's cover) is requested in the round's outbox, with its deterministic tx id, and
   saved, before any call. A stake whose earlier debit is still open is refused (``Conflict``:
   retry the same request id; the recovery settles what a crash left open).
3. **Debit**: each debit is sent, retried with its tx id until a definite answer or the attempts run
   out.
4. **Bet**: every debit applied, the command runs through the pipeline (``execute``): the round
   records ``bet_placed`` and the outbox each debit's acceptance, with the request's record, in one
   transaction. Otherwise (a refusal, no answer, or the bet no longer fits the round) the debits are
   finished: a refused one is recorded as refused, the others are rolled back, and the caller hears
   why (``InsufficientFunds``, ``NotFound``, ``WalletRefused``, ``WalletUnavailable``, or the rule).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from eventsourcing.persistence import IntegrityError

from pokdeng_core import commands as rc
from pokdeng_core import events as re
from pokdeng_core import limits
from pokdeng_core.errors import InsufficientFunds
from pokdeng_core.machine import RoundState, decide_and_fold
from pokdeng_service.application.commands import PlaceBet, PlaceSideBet
from pokdeng_service.application.errors import Conflict, NotFound
from pokdeng_service.application.pipeline import (
    MAX_ATTEMPTS,
    Attempt,
    _disclosed,
    _replayed,
    authorise,
    check,
    execute,
)
from pokdeng_service.store import aggregates as ag
from pokdeng_service.wallet.errors import WalletRefused, WalletUnavailable
from pokdeng_service.wallet.outbox import DEBIT_OPEN, Tx, WalletTransactions, debit_tx_id
from pokdeng_service.wallet.platform import Answer, PlatformWallet, Unanswered

if TYPE_CHECKING:
    from pokdeng_service.application.principal import Principal
    from pokdeng_service.application.views import CommandResult

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
    def record(
        self, app: Any, round_id: str, change: Callable[[WalletTransactions], None]
    ) -> WalletTransactions | None: ...


def place_stake(
    port: StakePort, app: Any, principal: Principal, request_id: str, command: PlaceBet | PlaceSideBet
) -> CommandResult:
    """Debit the stake's money on the platform, then place it (or roll the debits back)."""
    check(request_id, command)
    authorise(principal, command)
    done = app.command_record(ag.command_uuid(request_id, principal.scope))
    if done is not None:
        return _replayed(app, done, command.fingerprint())
    planned = _request(port, app, principal, request_id, command)
    if planned is None:  # a round the internal wallets hold
        return execute(app, principal, request_id, command)
    table_id, currency, debits = planned
    ids = [tx.tx_id for tx in debits]
    answers: dict[str, Answer | None] = {}
    undone = True  # until the bet is recorded, the debits are to be finished without it
    try:
        for tx in debits:
            answers[tx.tx_id] = _debit(port, command.round_id, table_id, currency, tx)
        if all(answer is not None and answer.applied for answer in answers.values()):
            port.confirmed.update(answers)
            try:
                result = execute(app, principal, request_id, command)
            finally:
                for tx_id in ids:
                    port.confirmed.pop(tx_id, None)
            undone = result.replayed  # (another writer answered this request id: these debits placed nothing)
            if not undone:
                port.stats["stakes_placed"] += 1
            return result
        raise _refusal(principal, debits, answers)
    finally:
        if undone:
            _finish(port, app, command.round_id, debits, answers, request_id)
        port.unclaim(ids)
        if undone:
            port.finish_soon(app, command.round_id)  # the rollbacks just requested


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


def _request(
    port: StakePort, app: Any, principal: Principal, request_id: str, command: PlaceBet | PlaceSideBet
) -> tuple[str, str, list[Tx]] | None:
    """Step 2: the stake's debits requested and saved in the round's outbox (claimed by this thread)."""
    round_id = command.round_id
    for _attempt in range(MAX_ATTEMPTS):
        attempt = Attempt(app, principal, request_id)
        try:
            record = attempt.round(round_id, sealed=True)
            txs = port.load(app, round_id)
            if txs is None and record.state.reserved:
                return None
            events, _after = decide_and_fold(record.state, _core(command, record.state))
        except Exception as error:
            disclosed = _disclosed(principal, error)
            if disclosed is not error:
                raise disclosed from None
            raise
        if txs is None:
            txs = WalletTransactions(round_id, record.table_id, record.state.currency)
        ids = []
        for purpose, seat, bettor, payer, amount in _stakes(events, record.state.banker_player):
            earlier = txs.debits(purpose, seat, bettor)
            if any(tx.status == DEBIT_OPEN for tx in earlier):
                raise Conflict(
                    f"a debit of {bettor!r}'s stake on seat {seat} of round {round_id!r} is still open: "
                    "retry the same request id (it is finished by the platform's answer or rolled back)"
                )
            tx_id = debit_tx_id(round_id, purpose, seat, bettor, len(earlier))
            txs.request_debit(tx_id, payer, amount, purpose, seat, bettor, request_id)
            ids.append(tx_id)
        if not port.claim(ids):
            raise Conflict(f"the stake's debits {ids} are being sent: retry the same request id")
        try:
            app.save(txs)
        except IntegrityError:
            port.unclaim(ids)
            continue
        except BaseException:
            port.unclaim(ids)
            raise
        return txs.table_id, txs.currency, [txs.txs[tx_id] for tx_id in ids]
    raise Conflict(f"request {request_id!r} kept conflicting with concurrent writers; try again")


def _debit(port: StakePort, round_id: str, table_id: str, currency: str, tx: Tx) -> Answer | None:
    """Step 3: one debit sent until a definite answer; None if none came."""
    try:
        answer = port.platform.debit(tx.tx_id, tx.player, round_id, table_id, tx.amount, currency, tx.purpose)
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


def _refusal(principal: Principal, debits: list[Tx], answers: dict[str, Answer | None]) -> Exception:
    """Why the stake was not placed, as the caller may hear it."""
    for tx in debits:
        answer = answers.get(tx.tx_id)
        if answer is None or answer.applied:
            continue
        if answer.status == "insufficient_funds":
            error: Exception = InsufficientFunds(
                f"wallet {tx.player!r} cannot cover {tx.amount}: the platform holds {answer.balance}",
                required=tx.amount,
                available=answer.balance,
                wallet=tx.player,
            )
            return _disclosed(principal, error)
        if answer.status == "unknown_player":
            return NotFound(f"wallet {tx.player!r} not found (the platform has no such player)", wallet=tx.player)
        return WalletRefused(f"the platform refused debit {tx.tx_id}: {answer.reason or answer.status}", tx_id=tx.tx_id)
    return WalletUnavailable(
        "the platform's wallet did not answer the stake's debit; it is rolled back: retry the command",
        tx_id=debits[0].tx_id if debits else "",
    )
