"""``RemotePort``: the platform keeps the balances (the seamless wallet), pokdeng records every transaction.

* A stake (``PlaceBet``, ``PlaceSideBet``) is placed in two steps (``wallet.stakes``, the step the one
  pipeline runs ``before`` it): its debits are requested in the round's outbox and saved, then sent;
  only when the platform has applied every one does the pipeline record the command: ``bet_placed`` and
  the debits' acceptance in one transaction (``reserve`` finds the confirmed debit of the stake).
* The settlement (``settle``) requests one credit per player in the transaction of
  ``round_settled``: what the player's debits took plus its net. A void (``release``) requests the
  rollback of every accepted debit in the transaction of ``round_voided``. Both are sent right after
  the save, from the command's own thread (``finish``); what gets no answer is left to the recovery
  worker (``wallet.recovery``).
* ``finish`` also ends what a crash left: a debit requested and never answered (older than the
  grace, claimed by no thread of this process) is rolled back; rollbacks and credits are sent
  again with their tx ids until the platform answers.

A round started before the deployment chose the platform's wallets (reservations and no outbox)
is booked on the internal wallets to its end (``port.STORE_WALLETS``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError

from pokdeng_core import events as re
from pokdeng_core import limits
from pokdeng_core.errors import CurrencyMismatch
from pokdeng_service.application.attempt import Attempt
from pokdeng_service.application.commanding import Command
from pokdeng_service.application.errors import (
    Conflict,
    NotFound,
    WalletSessionMissing,
    WalletSessionRejected,
    WalletUnavailable,
    stream_forged,
)
from pokdeng_service.application.round_commands import PlaceBet, PlaceSideBet
from pokdeng_service.application.views import CommandResult
from pokdeng_service.application.wallet_port import STORE_WALLETS, Stake, Step
from pokdeng_service.store.integrity import StreamIntegrityError
from pokdeng_service.store.vault import VaultError
from pokdeng_service.wallet.config import WalletConfig
from pokdeng_service.wallet.outbox import (
    DEBIT_OPEN,
    ROLLING_BACK,
    Tx,
    WalletTransactions,
    closing_tx,
    credit_tx_id,
    load_transactions,
)
from pokdeng_service.wallet.platform import Answer, PlatformWallet, SessionRejected, Unanswered
from pokdeng_service.wallet.sessions import PlayerSession, SessionBook
from pokdeng_service.wallet.stakes import StakeStep

if TYPE_CHECKING:
    from pokdeng_service.store.aggregates import RoundRecord

log = logging.getLogger("pokdeng.wallet")

MONEY_CLOSES = frozenset({re.RoundSettled.kind, re.RoundVoided.kind})
RECOVERY = "wallet-recovery"  # the command id of the facts the recovery records
_KEY = "wallet-tx"


class RemotePort:
    """The platform's wallets, through ``platform``; transactions recorded in each round's outbox."""

    remote = True

    def __init__(self, platform: PlatformWallet, config: WalletConfig) -> None:
        self.platform = platform
        self.config = config
        self.confirmed: dict[str, Any] = {}  # tx id -> the platform's Answer, until its bet is recorded
        self.recovery: Any = None  # the ``WalletRecovery`` that finishes transactions (None: at once)
        self.sessions: SessionBook | None = None  # the players' wallet sessions (``--wallet hub88``; None: no tokens)
        self.stats: Counter[str] = Counter()
        self.clock: Callable[[], datetime] = lambda: datetime.now(tz=UTC)
        self._claimed: set[str] = set()
        self._lock = threading.Lock()
        self._stake = StakeStep(self)

    # -- commands ------------------------------------------------------------------------------

    def before(self, command: Command) -> Step | None:
        """A stake's debits are taken before it is recorded (``wallet.stakes``)."""
        return self._stake if isinstance(command, PlaceBet | PlaceSideBet) else None

    def after(self, app: Any, result: CommandResult) -> None:
        """A round that closed has its credits or rollbacks sent at once."""
        if not result.replayed and result.stream == "round" and any(e.kind in MONEY_CLOSES for e in result.events):
            self.finish_soon(app, result.id)

    def finish_soon(self, app: Any, round_id: str) -> None:
        """Send the round's requested transactions now, from the command's thread (every command finishes
        its own, in parallel); what is left (no answer yet) goes to the recovery worker."""
        try:
            left = self.finish(app, round_id)
        except Exception:  # the recovery tries again
            log.exception("wallet: the transactions of round %s could not be finished now", round_id)
            left = 1
        recovery = self.recovery
        if left and recovery is not None and recovery.running:
            recovery.wake(round_id)

    # -- claims: one thread of this process works on a transaction at a time ---------------------

    def claim(self, tx_ids: list[str]) -> bool:
        with self._lock:
            if any(t in self._claimed for t in tx_ids):
                return False
            self._claimed.update(tx_ids)
            return True

    def unclaim(self, tx_ids: list[str]) -> None:
        with self._lock:
            self._claimed.difference_update(tx_ids)

    # -- sessions (``--wallet hub88``: every call names the player's wallet session) ---------------

    def session_number(self, player: str, currency: str) -> int:
        """The number of the session a new debit of ``player`` is sent with (0: the platform takes none);
        ``WalletSessionMissing`` or ``CurrencyMismatch``: the debit is not requested."""
        return 0 if self.sessions is None else self.sessions.current(player, currency).number

    def player_session(self, player: str, number: int) -> PlayerSession | None:
        """The session a transaction recorded with ``number`` is sent with (None: the platform takes none)."""
        return None if self.sessions is None else self.sessions.session(player, number)

    # -- funds ---------------------------------------------------------------------------------

    def stake_funds(self, attempt: Attempt, round_id: str) -> int | None:
        if self.transactions(attempt, round_id) is None:
            return None  # a round the internal wallets hold
        return limits.MAX_AMOUNT  # the platform's debit is the funds check

    def funds(self, attempt: Attempt, player: str, currency: str, missing_ok: bool = False) -> int:
        """The player's balance on the platform (``missing_ok``: 0 for a player the platform does not know, or
        whose wallet session is missing or refused: a room's seat check unseats it)."""
        try:
            session = None if self.sessions is None else self.sessions.current(player, currency).number
            balance = self.platform.balance(player, currency, session=self.player_session(player, session or 0))
        except (WalletSessionMissing, CurrencyMismatch):
            if missing_ok:
                return 0
            raise
        except SessionRejected as rejected:
            if missing_ok:
                return 0
            raise WalletSessionRejected(
                f"the platform refuses {player!r}'s wallet session ({rejected.status}): launch the game again and hand "
                "pokdeng the new session",
                player=player,
                status=rejected.status,
            ) from None
        except Unanswered as error:
            raise WalletUnavailable(f"the platform's wallet did not give {player!r}'s balance: {error}") from None
        if balance is None:
            if missing_ok:
                return 0
            raise NotFound(f"wallet {player!r} not found (the platform has no such player)", wallet=player)
        return balance

    def closing_funds(self, attempt: Attempt, record: RoundRecord, player: str) -> int | None:
        if self.transactions(attempt, record.round_id) is None:
            return STORE_WALLETS.closing_funds(attempt, record, player)
        return None  # the platform checks a player-banker's funds at each debit of its cover

    # -- booking (in the command's transaction) ------------------------------------------------------

    def transactions(self, attempt: Attempt, round_id: str) -> WalletTransactions | None:
        """The round's outbox, loaded once an attempt (None: the round's money is the internal wallets')."""
        found = attempt.loaded.get((_KEY, round_id))
        if found is None:
            found = self.load(attempt.app, round_id)
            if found is None:
                return None
            attempt.loaded[(_KEY, round_id)] = found
        assert isinstance(found, WalletTransactions)
        return found

    def load(self, app: Any, round_id: str) -> WalletTransactions | None:
        try:
            return load_transactions(app, round_id)
        except StreamIntegrityError as error:
            raise stream_forged(error.stream, error.ident, error.uuid, error.problem) from None

    def reserve(self, attempt: Attempt, record: RoundRecord, player: str, amount: int, stake: Stake) -> None:
        txs = self.transactions(attempt, record.round_id)
        if txs is None:
            return STORE_WALLETS.reserve(attempt, record, player, amount, stake)
        open_ = [t for t in txs.debits(*stake) if t.status == DEBIT_OPEN]
        tx = open_[-1] if open_ else None
        answer = self.confirmed.get(tx.tx_id) if tx is not None else None
        if tx is None or answer is None or tx.amount != amount or tx.player != player:
            raise WalletUnavailable(
                f"no debit of {amount} from {player!r} confirmed by the platform for the stake {stake} "
                f"of round {record.round_id!r}: a stake is placed only after its debit (docs/wallet.md)"
            )
        txs.accept_debit(tx.tx_id, answer.balance, answer.platform_ref, attempt.request_id)
        return None

    def settle(self, attempt: Attempt, record: RoundRecord, player: str, reserved: int, net: int) -> None:
        txs = self.transactions(attempt, record.round_id)
        if txs is None:
            return STORE_WALLETS.settle(attempt, record, player, reserved, net)
        debits = txs.accepted(player)
        if sum(d.amount for d in debits) != reserved:
            raise RuntimeError(
                f"round {record.round_id}: {player!r} reserved {reserved}, its accepted debits hold "
                f"{sum(d.amount for d in debits)}"
            )
        if debits or net:
            tx_id = credit_tx_id(record.round_id, player)
            session = debits[0].session if debits else self._newest_number(player)  # (a win goes with its bet's)
            txs.request_credit(tx_id, player, reserved + net, [d.tx_id for d in debits], attempt.request_id, session)
        return None

    def release(self, attempt: Attempt, record: RoundRecord, player: str, amount: int, reason: str) -> None:
        txs = self.transactions(attempt, record.round_id)
        if txs is None:
            return STORE_WALLETS.release(attempt, record, player, amount, reason)
        debits = txs.accepted(player)
        if sum(d.amount for d in debits) != amount:
            raise RuntimeError(f"round {record.round_id}: {player!r} releases {amount}, its debits hold another sum")
        for debit in debits:
            txs.request_rollback(debit.tx_id, reason, attempt.request_id)
        return None

    def _newest_number(self, player: str) -> int:
        found = None if self.sessions is None else self.sessions.newest(player)
        return 0 if found is None else found.number

    def touched(self, attempt: Attempt) -> list[Aggregate]:
        changed = [a for a in attempt.loaded.values() if isinstance(a, WalletTransactions) and a.pending_events]
        return [*changed, *attempt.wallets()]

    # -- after the save: the platform calls ----------------------------------------------------------

    def record(
        self, app: Any, round_id: str, change: Callable[[WalletTransactions], None]
    ) -> WalletTransactions | None:
        """Apply ``change`` to the round's outbox as stored now, and save it (again on a conflict); the
        outbox as saved."""
        for _ in range(8):
            txs = self.load(app, round_id)
            if txs is None:
                return None
            change(txs)
            if not txs.pending_events:
                return txs
            try:
                app.save(txs)
                return txs
            except IntegrityError:
                continue
        raise Conflict(f"the transactions of round {round_id!r} kept conflicting with concurrent writers")

    def finish(self, app: Any, round_id: str, *, abandoned_after: float | None = None) -> int:
        """Do the round's pending transactions that no thread of this process holds; how many are left.

        An open debit older than ``abandoned_after`` seconds (default: the configured grace) is rolled back.
        The platform is called for each transaction, and the answers are recorded together, in one save."""
        txs = self.load(app, round_id)
        if txs is None:
            return 0
        grace = self.config.debit_grace if abandoned_after is None else abandoned_after
        pending = txs.pending()
        mine = [tx for tx in pending if self.claim([tx.tx_id])]
        left = len(pending) - len(mine)
        try:
            work = self._abandoned(app, txs, mine, grace)
            left += len(mine) - len(work)
            answers: list[tuple[Tx, Answer]] = []
            closing = closing_tx(txs.txs) if self.platform.protocol == 2 else None
            work.sort(key=lambda t: t.tx_id == closing)  # (the round's last transaction last)
            for tx in work:
                if tx.tx_id == closing and self._before_closing(txs, tx, work, answers):
                    left += 1  # (sent once every other transaction of the round has its answer: next time)
                    continue
                answer = self._call(txs, tx, closing=tx.tx_id == closing)
                refused = answer is not None and tx.kind == "debit" and answer.status != "rolled_back"
                if answer is None or refused:
                    left += 1  # (a refused rollback stays pending: it is sent again)
                if answer is not None and not (refused and tx.refusal):
                    answers.append((tx, answer))  # (a rollback's refusal is recorded once)
            if answers:
                self.record(app, round_id, lambda t: _outcomes(t, answers))
        except Exception:
            log.exception("wallet: the transactions of round %s could not be finished (tried again later)", round_id)
            return len(pending)
        finally:
            self.unclaim([tx.tx_id for tx in mine])
        return left

    def _abandoned(self, app: Any, txs: WalletTransactions, mine: list[Tx], grace: float) -> list[Tx]:
        """The claimed transactions to send now: rollbacks and credits, and the open debits old enough to be
        taken as abandoned (their rollback recorded first)."""
        now = self.clock()
        old = []
        work = [tx for tx in mine if tx.status == ROLLING_BACK or tx.kind == "credit"]
        for tx in mine:
            if tx.kind == "debit" and tx.status == DEBIT_OPEN:
                age = (now - datetime.fromisoformat(tx.requested_at)).total_seconds()
                if age >= grace:
                    log.warning("wallet: debit %s was left unanswered (%.1f s ago): rolling it back", tx.tx_id, age)
                    old.append(tx.tx_id)
        if old:

            def request(outbox: WalletTransactions) -> None:
                for tx_id in old:
                    _rollback_open(outbox, tx_id, "recovered")

            saved = self.record(app, txs.round_id, request)
            if saved is not None:  # (one whose command finished it meanwhile is left alone)
                work += [saved.txs[tx_id] for tx_id in old if saved.txs[tx_id].status == ROLLING_BACK]
        return work

    @staticmethod
    def _before_closing(txs: WalletTransactions, closing: Tx, work: list[Tx], answers: list[tuple[Tx, Answer]]) -> bool:
        """Whether another transaction of the round is still without its answer (a refused rollback aside: it
        waits on the platform's operators, not on a call), so that the round's closing one must wait."""
        answered = {tx.tx_id for tx, answer in answers if tx.kind == "credit" or answer.status == "rolled_back"}
        waiting = [t for t in txs.pending() if t.tx_id != closing.tx_id and not t.refusal and t.tx_id not in answered]
        return bool(waiting)

    def _call(self, txs: WalletTransactions, tx: Tx, closing: bool = False) -> Answer | None:
        """The platform's definite answer to one rollback or credit, or None (to be tried again later); ``closing``:
        the round's last transaction (protocol v2's ``round_closed``)."""
        try:
            session = self.player_session(tx.player, tx.session)  # (the one its bet was sent with)
            if tx.kind == "debit":
                answer = self.platform.rollback(
                    tx.tx_id, tx.player, txs.round_id, tx.reason, tx.amount, txs.currency, txs.table_id, closing,
                    session=session,
                )  # fmt: skip
            else:
                answer = self.platform.credit(
                    tx.tx_id, tx.player, txs.round_id, txs.table_id, tx.amount, txs.currency, list(tx.debits), closing,
                    session=session,
                )  # fmt: skip
        except Unanswered:
            return None
        except (WalletSessionMissing, VaultError) as error:  # (sent again by the recovery; owed after OWED_AFTER)
            log.error("wallet: %s of round %s cannot be sent: %s", tx.tx_id, txs.round_id, error)
            return None
        if tx.kind == "debit" and answer.status != "rolled_back":
            self.stats["rollbacks_refused"] += 1
            log.error("wallet: the platform refuses to roll back %s: %s", tx.tx_id, answer.reason or answer.status)
            return answer
        if tx.kind == "credit" and not answer.applied:
            log.error("wallet: the platform refuses credit %s: %s", tx.tx_id, answer.reason or answer.status)
        self.stats[f"{'rollbacks' if tx.kind == 'debit' else 'credits'}_{answer.status}"] += 1
        return answer


def _outcomes(txs: WalletTransactions, answers: list[tuple[Tx, Answer]]) -> None:
    """Record the platform's answers on the outbox as stored now (each only if still pending)."""
    for tx, answer in answers:
        if tx.kind == "debit" and answer.status != "rolled_back":
            _rollback_refused(txs, tx.tx_id, answer.status, answer.reason)
        elif tx.kind == "debit":
            _rolled_back(txs, tx.tx_id, answer.debited, answer.balance)
        elif answer.applied:
            _credited(txs, tx.tx_id, answer.balance, answer.platform_ref)
        else:
            _credit_refused(txs, tx.tx_id, answer.status, answer.reason)


def _status(txs: WalletTransactions, tx_id: str) -> str | None:
    found = txs.txs.get(tx_id)
    return None if found is None else found.status


def _rollback_open(txs: WalletTransactions, tx_id: str, reason: str) -> None:
    if _status(txs, tx_id) == DEBIT_OPEN:
        txs.request_rollback(tx_id, reason, RECOVERY)


def _rolled_back(txs: WalletTransactions, tx_id: str, debited: bool, balance: int) -> None:
    if _status(txs, tx_id) == ROLLING_BACK:
        txs.record_rollback(tx_id, debited, balance, RECOVERY)


def _rollback_refused(txs: WalletTransactions, tx_id: str, status: str, reason: str) -> None:
    found = txs.txs.get(tx_id)
    if found is not None and found.status == ROLLING_BACK and not found.refusal:
        txs.refuse_rollback(tx_id, status, reason, RECOVERY)


def _credited(txs: WalletTransactions, tx_id: str, balance: int, platform_ref: str) -> None:
    if _status(txs, tx_id) == DEBIT_OPEN:
        txs.apply_credit(tx_id, balance, platform_ref, RECOVERY)


def _credit_refused(txs: WalletTransactions, tx_id: str, status: str, reason: str) -> None:
    if _status(txs, tx_id) == DEBIT_OPEN:
        txs.refuse_credit(tx_id, status, reason, RECOVERY)


def record_resolution(app: Any, round_id: str, tx_id: str, reason: str, operator: str) -> None:
    """An operator's resolution of a transaction (``tx_resolved``, ``pokdeng wallet resolve``), saved with the
    outbox's version check (again on a conflict with a running server)."""
    for _ in range(8):
        txs = load_transactions(app, round_id)
        if txs is None:
            raise NotFound(f"round {round_id!r} has no transactions with the platform")
        txs.resolve(tx_id, reason, operator, "wallet-resolve")
        try:
            app.save(txs)
            return
        except IntegrityError:
            continue
    raise Conflict(f"the transactions of round {round_id!r} kept conflicting with concurrent writers")


def attach(apps: list[Any], config: WalletConfig, *, recovery: bool = True) -> list[Any]:
    """Give every application of a deployment the platform's wallet (one client shared by all); returns the
    recovery workers (one per application, not yet started)."""
    from pokdeng_service.wallet.recovery import WalletRecovery

    platform: PlatformWallet = config.platform()
    sessions = SessionBook(apps) if config.kind == "hub88" else None  # (Hub88 takes the player's session token)
    workers = []
    for app in apps:
        port = RemotePort(platform, config)
        port.sessions = sessions
        app.wallet_port = port
        if recovery:
            worker = WalletRecovery(app, port, interval=config.recovery_interval)
            port.recovery = worker
            workers.append(worker)
    return workers


def close_platform(apps: list[Any]) -> None:
    """Close the platform client the applications share (``attach``)."""
    seen = set()
    for app in apps:
        port = getattr(app, "wallet_port", None)
        if isinstance(port, RemotePort) and id(port.platform) not in seen:
            seen.add(id(port.platform))
            with contextlib.suppress(Exception):
                port.platform.close()


__all__ = ["MONEY_CLOSES", "RemotePort", "attach", "close_platform", "record_resolution"]
