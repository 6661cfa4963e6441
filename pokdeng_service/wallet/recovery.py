"""The wallet recovery: every pending transaction with the platform is finished, also after a crash.

Like the turn clock, the worker follows the store's notification log (from its start when the
process starts), reading only the rows of the outboxes (``WalletTransactions``, selected by topic),
and keeps per round the transactions the log leaves pending: a request (of a debit, a rollback,
a credit) opens one, its outcome closes it. Each tick it asks ``RemotePort.finish`` to do what
each such round still has pending: credits and rollbacks are sent again with their tx ids until
the platform answers them; a debit left open (no definite answer recorded, claimed by no thread of
this process, older than the grace: its command died with a process, or gave up) is rolled back
first, rounds in the order they became pending. The outcomes recorded come back through the log
and close the transactions (a rollback's refusal does not: it is sent again). A command whose credits
or rollbacks did not all get an answer wakes the worker at once (``wake``). The worker's ``owed``
(``wallet.owed.OwedTracker``) keeps the money owed to players from the same rows: the
``pokdeng_wallet_owed_*`` metrics.

Several processes on one store (PostgreSQL replicas) each run a worker: every call is idempotent
by its tx id and every outcome is saved with the outbox's version check, so the first to record
an answer wins and the others find nothing left to do.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from eventsourcing.utils import get_topic

from pokdeng_service.application.errors import StreamForged
from pokdeng_service.wallet.outbox import FACTS, load_transactions
from pokdeng_service.wallet.owed import OwedTracker, track

TOPICS = tuple(get_topic(cls) for cls in FACTS.values())
"""The stored topics of the outbox's facts (the rows the worker reads of the log)."""
OPENS = frozenset({"debit_requested", "rollback_requested", "credit_requested"})

log = logging.getLogger("pokdeng.wallet")


class WalletRecovery:
    def __init__(self, app: Any, port: Any, interval: float = 0.5) -> None:
        self.app = app
        self.port = port
        self.interval = interval
        self.position = 0
        self.rounds: dict[str, set[str]] = {}  # round id -> its transactions the log leaves pending
        self.refused: set[str] = set()  # rounds whose outbox stream is refused (not what it claims)
        self.finished = 0  # ticks that left nothing pending
        self.owed = track(OwedTracker(self._currency))  # the money owed (``pokdeng_wallet_owed_*``)
        self._woken: set[str] = set()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stop.is_set()

    def follow(self) -> None:
        """Read the outboxes' new rows of the log: the transactions each opens or closes."""
        recorder, mapper = self.app.recorder, self.app.mapper
        while True:
            notes = recorder.select_notifications(start=self.position + 1, limit=1000, topics=TOPICS)
            if not notes:
                return
            for note in notes:
                fact = mapper.to_domain_event(note)
                round_id, tx_id = getattr(fact, "stream_id", ""), fact.data.get("tx_id")
                if not round_id or round_id in self.refused:
                    continue
                pending = self.rounds.setdefault(round_id, set())
                if fact.kind in OPENS:
                    pending.add(tx_id)
                elif fact.kind != "rollback_refused":  # (a refused rollback stays pending: it is sent again)
                    pending.discard(tx_id)
                self.owed.see(round_id, fact.kind, fact.data, fact.timestamp)
                if not pending:
                    del self.rounds[round_id]
            self.position = notes[-1].id

    def _currency(self, round_id: str) -> str:
        found = load_transactions(self.app, round_id)
        return found.currency if found is not None else ""

    def wake(self, round_id: str) -> None:
        """Finish this round's transactions at the next moment (a command just requested some)."""
        with self._lock:
            self._woken.add(round_id)
        self._wake.set()

    def tick(self, abandoned_after: float | None = None) -> int:
        """Finish what can be finished now; returns how many transactions are left pending."""
        with self._lock:
            woken, self._woken = self._woken, set()
        left = 0
        started = time.monotonic()
        for round_id in sorted(woken):  # (before reading the log: their answers are awaited)
            left += self._finish(round_id, abandoned_after)
        followed = time.monotonic()
        self.follow()
        rounds = [r for r in self.rounds if r not in woken]  # (in the order they became pending: oldest first)
        finishing = time.monotonic()
        for round_id in rounds:
            left += self._finish(round_id, abandoned_after)
        took = time.monotonic() - started
        if took > 2.0:
            log.warning(
                "wallet recovery: a tick took %.1f s (woken %d rounds %.1f s, log %.1f s, %d rounds %.1f s)",
                took, len(woken), followed - started, finishing - followed, len(rounds), time.monotonic() - finishing,
            )  # fmt: skip
        if not left:
            self.finished += 1
        return left

    def _finish(self, round_id: str, abandoned_after: float | None) -> int:
        try:
            return int(self.port.finish(self.app, round_id, abandoned_after=abandoned_after))
        except StreamForged as error:
            self.rounds.pop(round_id, None)
            self.refused.add(round_id)
            log.error("wallet recovery: round %r skipped, its transactions stream is refused: %s", round_id, error)
            return 0
        except Exception:  # one round that cannot be read holds up no other
            log.exception("wallet recovery: the transactions of round %r could not be finished", round_id)
            return 1

    def pending(self) -> int:
        """Transactions the log leaves pending now (a read, no call to the platform)."""
        self.follow()
        return sum(len(pending) for pending in self.rounds.values())

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.is_set():
                try:
                    self.tick()
                except Exception:  # keep the worker running; the next tick retries
                    log.exception("wallet recovery tick failed")
                self._wake.wait(self.interval)
                self._wake.clear()

        self._stop.clear()
        self._thread = threading.Thread(target=loop, name="pokdeng-wallet-recovery", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


__all__ = ["WalletRecovery"]
