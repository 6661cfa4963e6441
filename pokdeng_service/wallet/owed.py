"""Money owed to players, as a server sees it: the ``pokdeng_wallet_owed_*`` metrics (docs/wallet.md, "Money owed").

Each recovery worker (``wallet.recovery``) reads every outbox fact of its partition's log and hands it to
its ``OwedTracker`` (``see``), which keeps only what may still become or is owed: the transactions
requested and not finished (a debit until it is refused, rolled back or settled by a credit; a credit
until it is applied), and the owed ones (``outbox.Tx.owed``): a credit refused, a rollback refused, a credit
unanswered for ``OWED_AFTER`` seconds; an operator's ``tx_resolved`` takes one off.

``OWED`` (in the process's default registry, served by ``pokdeng serve``'s metrics endpoint) sums the
trackers of the process when scraped:

* ``pokdeng_wallet_owed_minor_units{currency}``: the money owed, in minor units of each currency;
* ``pokdeng_wallet_owed_transactions{currency}``: how many transactions owe it.

A currency nobody is owed has no series (nothing owed: no series at all).

Every replica on one store sees the same owed money: alert on ``max``, never ``sum``, across instances
(``deploy/prometheus/pokdeng-wallet.rules.yml``).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from prometheus_client import REGISTRY
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pokdeng_service.wallet.outbox import OWED_AFTER


@dataclass
class _Open:
    round_id: str
    player: str
    amount: int
    kind: str  # "debit" or "credit"
    requested_at: datetime
    owed: bool = False
    currency: str = ""


class OwedTracker:
    """The owed money of one partition, from the outbox facts of its log (``see``, in log order)."""

    def __init__(self, currency_of: Callable[[str], str], after: float = OWED_AFTER) -> None:
        self.currency_of = currency_of  # round id -> its currency (read when first needed)
        self.after = after
        self.open: dict[str, _Open] = {}
        self._lock = threading.Lock()

    def see(self, round_id: str, kind: str, data: Mapping[str, Any], timestamp: Any) -> None:
        tx_id = str(data.get("tx_id", ""))
        with self._lock:
            if kind in ("debit_requested", "credit_requested"):
                moment = timestamp if isinstance(timestamp, datetime) else datetime.fromisoformat(str(timestamp))
                kind_of = "debit" if kind == "debit_requested" else "credit"
                self.open[tx_id] = _Open(round_id, str(data["player"]), int(data["amount"]), kind_of, moment)
                for debit in data.get("debits", ()) if kind == "credit_requested" else ():
                    self.open.pop(str(debit), None)  # (settled by this credit: the credit carries its money now)
            elif kind in ("credit_refused", "rollback_refused"):
                found = self.open.get(tx_id)
                if found is not None:
                    found.owed = True
            elif kind in ("debit_refused", "debit_rolled_back", "credit_applied", "tx_resolved"):
                self.open.pop(tx_id, None)

    def owed(self, now: datetime | None = None) -> dict[str, tuple[int, int]]:
        """currency -> (minor units owed, transactions owing them)."""
        moment = now or datetime.now(tz=UTC)
        with self._lock:
            found = [
                o for o in self.open.values()
                if o.owed or (o.kind == "credit" and (moment - o.requested_at).total_seconds() >= self.after)
            ]  # fmt: skip
        out: dict[str, tuple[int, int]] = {}
        for item in found:
            if not item.currency:
                try:
                    item.currency = self.currency_of(item.round_id) or "?"
                except Exception:  # (a metric never fails a scrape)
                    item.currency = "?"
            amount, count = out.get(item.currency, (0, 0))
            out[item.currency] = (amount + item.amount, count + 1)
        return out


class _Owed(Collector):
    def __init__(self) -> None:
        self.trackers: weakref.WeakSet[OwedTracker] = weakref.WeakSet()

    def collect(self) -> Iterator[Metric]:
        totals: dict[str, tuple[int, int]] = {}
        for tracker in list(self.trackers):
            for currency, (amount, number) in tracker.owed().items():
                had = totals.get(currency, (0, 0))
                totals[currency] = (had[0] + amount, had[1] + number)
        money = GaugeMetricFamily(
            "pokdeng_wallet_owed_minor_units",
            "Money the platform's wallet owes players that no call of pokdeng will pay by itself (a credit or "
            "rollback refused, a credit unanswered too long), in minor units, by currency",
            labels=["currency"],
        )
        count = GaugeMetricFamily(
            "pokdeng_wallet_owed_transactions", "Transactions whose money players are owed, by currency",
            labels=["currency"],
        )  # fmt: skip
        for currency, (amount, number) in sorted(totals.items()):
            money.add_metric([currency], amount)
            count.add_metric([currency], number)
        yield money
        yield count


OWED = _Owed()
REGISTRY.register(OWED)


def track(tracker: OwedTracker) -> OwedTracker:
    """Count ``tracker`` in the process's metrics (for as long as it lives)."""
    OWED.trackers.add(tracker)
    return tracker


__all__ = ["OWED", "OwedTracker", "track"]
