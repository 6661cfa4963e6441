"""The read models in the application's SQLite file: views, and tracking in a table of their own.

The tracking table's DDL is here (the library's would name it ``tracking``); the views' DDL,
writes and queries are shared with PostgreSQL (``sql``). SQLite has no subscriptions:
``ReadModels.run_in_background`` polls it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from eventsourcing.persistence import OperationalError, Tracking
from eventsourcing.sqlite import SQLiteTrackingRecorder

from pokdeng_service.readmodels.recorder import TRACKING_TABLE
from pokdeng_service.readmodels.sql import SQLViews


class SQLiteReadModelRecorder(SQLiteTrackingRecorder, SQLViews):
    """Views and tracking in the application's SQLite file; tracking in ``pokdeng_readmodels_tracking``."""

    def __init__(self, datastore: Any, **kwargs: Any) -> None:
        super().__init__(datastore, **kwargs)
        if not self.datastore.single_row_tracking:
            raise OperationalError("the read models need single-row tracking (SINGLE_ROW_TRACKING=y)")
        self.insert_tracking_statement = (
            f"INSERT INTO {TRACKING_TABLE} VALUES (:application_name, :notification_id) "
            "ON CONFLICT (application_name) DO UPDATE SET notification_id = :notification_id "
            f"WHERE {TRACKING_TABLE}.notification_id < :notification_id RETURNING notification_id"
        )
        self.select_max_tracking_id_statement = (
            f"SELECT MAX(notification_id) FROM {TRACKING_TABLE} WHERE application_name=?"
        )

    def construct_create_table_statements(self) -> list[str]:
        # The library's statements name the table "tracking"; ours has a table of its own.
        return [
            f"CREATE TABLE IF NOT EXISTS {TRACKING_TABLE} (application_name TEXT, notification_id INTEGER, "
            "PRIMARY KEY (application_name)) WITHOUT ROWID",
            *self._view_statements(),
        ]

    def _create_table(self, c: Any) -> None:
        super()._create_table(c)
        self._migrate(c)  # in the same transaction: views of another version are dropped and replayed

    def _name(self, table: str) -> str:
        return table

    def _sql(self, text: str) -> str:
        return text.replace("%s", "?")

    def _transaction(self, *, commit: bool) -> AbstractContextManager[Any]:
        return self.datastore.transaction(commit=commit)

    def _track(self, cursor: Any, tracking: Tracking) -> None:
        self._insert_tracking(cursor, tracking)


__all__ = ["SQLiteReadModelRecorder"]
