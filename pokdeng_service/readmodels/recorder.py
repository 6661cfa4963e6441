"""What every backend's recorder is: a tracking recorder that also holds the views.

``ReadModelRecorder.apply`` folds a page of decoded events (``fold``) and writes the views'
changes with the page's last position in ONE transaction, after checking that the tracking record
still holds the position the page was read after (else :class:`PositionMoved`). The backends are
``memory`` (POPO), ``sqlite`` and ``postgres`` (the last two share ``sql``).

The tracking record lives in the table ``pokdeng_readmodels_tracking`` (:data:`TRACKING_TABLE`; the
*tracking name* :data:`TRACKING_NAME` is also the eventsourcing environment name of the read
models). Its row ``application_name = app.name`` holds the position of the last notification whose
effects are in the views; the row :data:`MIGRATION_ROW` is never reset.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from eventsourcing.persistence import IntegrityError, TrackingRecorder

from pokdeng_service.application.views import StatementLine
from pokdeng_service.readmodels.fold import Item, Project, _project
from pokdeng_service.readmodels.models import HouseTotals, OpenRound, RoundSummary, WalletBalance

TRACKING_NAME = "pokdeng_readmodels"
TRACKING_TABLE = f"{TRACKING_NAME}_tracking"
MIGRATION_ROW = "__migration__"


class PositionMoved(Exception):
    """The tracking position is not the one a batch was read after: another process got there first."""


class ReadModelRecorder(TrackingRecorder, ABC):
    """A tracking recorder that also holds the views and writes both in one transaction."""

    @abstractmethod
    def apply(
        self, application_name: str, expected: int | None, items: Sequence[Item], project: Project = _project
    ) -> None:
        """Project ``items`` and record the last one's position, atomically.

        ``expected``: the position the items were read after; the write is refused with
        :class:`PositionMoved` if the tracking record holds anything else. ``None``: the
        library's rule only (the position must grow, else ``IntegrityError``). ``project``: the
        fold of one event (``fold._project``; ``ReadModels`` hands over the one it holds).
        """

    @abstractmethod
    def reset(self) -> None:
        """Empty every view and set every tracking position to 0, in one transaction."""

    def position(self, application_name: str) -> int:
        return self.max_tracking_id(application_name) or 0

    @abstractmethod
    def last_rounds(self, table_id: str | None, player: str | None, limit: int) -> tuple[RoundSummary, ...]: ...

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


__all__ = ["MIGRATION_ROW", "TRACKING_NAME", "TRACKING_TABLE", "Item", "PositionMoved", "ReadModelRecorder"]
