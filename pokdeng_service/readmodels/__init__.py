"""Read models: projections of the event log into queryable tables (recent rounds, wallet statements,
open rounds, the house's ledger, the tables and wallets directories), with a persisted tracking
position so that each event is applied once.

Laid out by job:

* ``models``: the record types the queries return (``RoundSummary``, ``WalletBalance``, ...) and the
  rows the projection keeps;
* ``fold``: the pure fold (decoded events → changes of the views, no I/O) and which stored topics
  change a view (``PROJECTED_TOPICS``);
* ``recorder``: what every backend's recorder is (``ReadModelRecorder``, ``PositionMoved``), the
  tracking record's names and the views' version (``VIEWS_VERSION``);
* one module per backend, each with its recorder: ``memory`` (POPO), ``sqlite`` and ``postgres``
  (these two share the SQL views of ``sql``, whose tables are in ``sqlschema``);
* ``paging``: the list queries' checks, cursors and the merge of partitions' pages;
* ``runner``: ``ReadModels`` (catch-up in pages, the background thread, rebuild, the queries),
  ``ReadModelProjection`` for eventsourcing's ``ProjectionRunner``, ``recorder_class``;
* ``partitioned``: ``PartitionedReadModels``, one ``ReadModels`` per partition queried as one.

May import: ``pokdeng_core``, ``pokdeng_service.store`` and ``pokdeng_service.application`` (and the
libraries).
"""

from pokdeng_service.readmodels.fold import PROJECTED_TOPICS
from pokdeng_service.readmodels.memory import POPOReadModelRecorder
from pokdeng_service.readmodels.models import (
    HouseTotals,
    OpenRound,
    PlayerResult,
    RoundsPage,
    RoundSummary,
    TableSummary,
    WalletBalance,
)
from pokdeng_service.readmodels.postgres import PostgresReadModelRecorder
from pokdeng_service.readmodels.recorder import (
    TRACKING_NAME,
    TRACKING_TABLE,
    VIEWS_VERSION,
    PositionMoved,
    ReadModelRecorder,
)
from pokdeng_service.readmodels.runner import PAGE_SIZE, ReadModelProjection, ReadModels, recorder_class
from pokdeng_service.readmodels.sqlite import SQLiteReadModelRecorder

__all__ = [
    "PAGE_SIZE",
    "PROJECTED_TOPICS",
    "TRACKING_NAME",
    "TRACKING_TABLE",
    "VIEWS_VERSION",
    "HouseTotals",
    "OpenRound",
    "POPOReadModelRecorder",
    "PlayerResult",
    "PositionMoved",
    "PostgresReadModelRecorder",
    "ReadModelProjection",
    "ReadModelRecorder",
    "ReadModels",
    "RoundSummary",
    "RoundsPage",
    "SQLiteReadModelRecorder",
    "TableSummary",
    "WalletBalance",
    "recorder_class",
]
