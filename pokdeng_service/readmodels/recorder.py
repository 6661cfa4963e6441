"""What every backend's recorder is: a tracking recorder that also holds the views.

``ReadModelRecorder.apply`` folds a page of decoded events (``fold``) and writes the views'
changes with the page's last position in ONE transaction, after checking that the tracking record
still holds the position the page was read after (else :class:`PositionMoved`). The backends are
``memory`` (POPO), ``sqlite`` and ``postgres`` (the last two share ``sql``).

The tracking record lives in the table ``pokdeng_readmodels_tracking`` (:data:`TRACKING_TABLE`; the
*tracking name* :data:`TRACKING_NAME` is also the eventsourcing environment name of the read
models). Its row ``application_name = app.name`` holds the position of the last notification whose
effects are in the views; the row :data:`MIGRATION_ROW` (the library's own marker of its tracking
format) is never reset.

The views' version
------------------
The row :data:`VIEWS_ROW` holds :data:`VIEWS_VERSION`, the version of the views' tables and of
what the fold puts in them; bump it whenever either changes. A recorder that creates its tables
(``CREATE_TABLE``, the default: every server and ``pokdeng rebuild-read-models``) compares it in
the same transaction: views of another version (or of none: stores made before the row existed)
are dropped, made again and every tracking position is set to 0, so the next catch-up replays the
log into them. Read-only recorders never migrate; ``ReadModels.position`` reports 0 for views of
another version, so that callers fold the log themselves rather than trust them.

Versions: 1 (no row) the first views; 2 the tables directory (``pokdeng_tables``), the wallets'
currency, text columns compared byte by byte (PostgreSQL ``COLLATE "C"``) and the indexes of the
list queries.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from eventsourcing.persistence import IntegrityError, TrackingRecorder

from pokdeng_service.application.views import StatementLine
from pokdeng_service.readmodels.fold import Item, Project, project_event
from pokdeng_service.readmodels.models import HouseTotals, OpenRound, RoundSummary, TableSummary, WalletBalance
from pokdeng_service.readmodels.paging import RoundFilter

TRACKING_NAME = "pokdeng_readmodels"
TRACKING_TABLE = f"{TRACKING_NAME}_tracking"
MIGRATION_ROW = "__migration__"  # eventsourcing's own row (its tracking table's format)
VIEWS_ROW = "__pokdeng_views__"
VIEWS_VERSION = 2


class PositionMoved(Exception):
    """The tracking position is not the one a batch was read after: another process got there first."""


class ReadModelRecorder(TrackingRecorder, ABC):
    """A tracking recorder that also holds the views and writes both in one transaction."""

    @abstractmethod
    def apply(
        self, application_name: str, expected: int | None, items: Sequence[Item], project: Project = project_event
    ) -> None:
        """Project ``items`` and record the last one's position, atomically.

        ``expected``: the position the items were read after; the write is refused with
        :class:`PositionMoved` if the tracking record holds anything else. ``None``: the
        library's rule only (the position must grow, else ``IntegrityError``). ``project``: the
        fold of one event (``fold.project_event``; ``ReadModels`` hands over the one it holds).
        """

    @abstractmethod
    def reset(self) -> None:
        """Empty every view and set every tracking position to 0, in one transaction."""

    def position(self, application_name: str) -> int:
        return self.max_tracking_id(application_name) or 0

    def views_current(self) -> bool:
        """Whether the stored views are of this code's :data:`VIEWS_VERSION` (in memory: always)."""
        return True

    @abstractmethod
    def last_rounds(self, table_id: str | None, player: str | None, limit: int) -> tuple[RoundSummary, ...]: ...

    @abstractmethod
    def list_rounds(self, query: RoundFilter, before_position: int | None, limit: int) -> tuple[RoundSummary, ...]:
        """Closed rounds, newest first (``closed_position`` descending), at most ``limit``: those ``query``
        lets through (its times are texts as ``closed_at`` is stored: ``RoundFilter.of`` makes them), with
        ``closed_position < before_position``."""

    @abstractmethod
    def list_tables(self, after: str | None, limit: int, profile: str | None) -> tuple[TableSummary, ...]:
        """Tables by ``table_id`` ascending (code point order), ids greater than ``after``, at most ``limit``."""

    @abstractmethod
    def list_wallets(self, after: str | None, limit: int) -> tuple[WalletBalance, ...]:
        """Wallets by ``wallet_id`` ascending (code point order), ids greater than ``after``, at most ``limit``."""

    @abstractmethod
    def statement(self, wallet_key: str, after: int, limit: int) -> tuple[StatementLine, ...]: ...

    @abstractmethod
    def wallet_balance(self, wallet_key: str) -> WalletBalance | None: ...

    @abstractmethod
    def open_rounds(self, table_id: str | None) -> tuple[OpenRound, ...]: ...

    @abstractmethod
    def house_totals(self, table_id: str | None) -> HouseTotals: ...

    @staticmethod
    def _check_items(application_name: str, current: int, expected: int | None, items: Sequence[Item]) -> None:
        if expected is None:
            if current >= items[0][0]:
                raise IntegrityError(f"{application_name} position {items[0][0]} was already processed ({current})")
        elif current != expected:
            raise PositionMoved(f"{application_name}: expected position {expected}, found {current}")


__all__ = [
    "MIGRATION_ROW",
    "TRACKING_NAME",
    "TRACKING_TABLE",
    "VIEWS_ROW",
    "VIEWS_VERSION",
    "Item",
    "PositionMoved",
    "ReadModelRecorder",
]
